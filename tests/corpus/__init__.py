"""Correct answers to every exercise in styles other than the reference solutions',
written as students write them (at least three per exercise): other block sizes and
fixed grids, device functions, eager signatures, dynamic shared memory, local arrays,
cuda.grid(2), a fresh allocation per chunk, zeroing on the default stream, events,
atomic.max/min/inc, locks of the student's own, a serial scan by one thread; and host
code that reads the input's values (chunks copied with their neighbouring bytes, an
output sized by a count made on the host, two inputs staged in one copy), which an
outside review found a stricter check of "your kernels did the work" failed.

Round r holds the r-th answer of every exercise, one cell each, in one notebook: the
cells share the notebook's names, so no two answers of a round bind the same name
but the imports and the exercise's own (`bound_names` checks it).
tests/test_corpus.py grades the rounds through the real grader: every answer must get
full marks.
"""

import ast
import importlib

import planted
from kernels.checks import registry

MODULES = ("gridstride", "atomics", "reduction", "topk", "mutex", "streams", "cooperative",
           "matmul")  # one a chapter; top-k apart (long answers)


def answers():
    """{label: [(style, source), ...]} in registry order."""
    found = {}
    for module in MODULES:
        found.update(importlib.import_module(f"corpus.{module}").ANSWERS)
    return {label: found.get(label, []) for label in registry.EXERCISES}


def rounds():
    """[[(label, style, source), ...], ...]: round r, the r-th answer of each exercise."""
    table = answers()
    depth = max(map(len, table.values()))
    return [[(label, *styles[r]) for label, styles in table.items() if r < len(styles)]
            for r in range(depth)]


def bound_names(source):
    """The top-level names a cell binds, imports left out."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def notebook(group):
    return planted.notebook([source.lstrip("\n") for _, _, source in group])
