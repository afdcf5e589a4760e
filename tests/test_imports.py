"""The kernels package imports in one direction: no module imports, however late,
a module that imports it back; and every checker module imports on its own."""

import ast
import json
import os
import pathlib
import pkgutil
import subprocess
import sys

import pytest

from kernels import checks
from kernels.checks import registry

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "kernels"


def modules():
    """{dotted name: path} of every module and package in kernels."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name, path, known):
    """{imported kernels module: first line} for every import statement in the module,
    at top level or inside a function (a late import is still a dependency)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..y import z
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            # `from package import submodule` depends on the submodule, else on the package
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                found.setdefault(target, node.lineno)
    return found


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_planted_cycle():
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert cycles(graph) == [("a", "b", "c")]
    assert cycles({"a": {"b": 1}, "b": {}}) == []


def test_no_module_of_kernels_imports_in_a_circle():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert "kernels.checks.registry" in graph["kernels.checks.core"]  # the parser sees imports
    found = set(cycles(graph))
    detail = "\n".join(f"{', '.join(c)}: " + "; ".join(
        f"{v} imports {w} (line {line})" for v in c for w, line in graph[v].items() if w in c)
        for c in sorted(found))
    assert not found, f"modules that import each other:\n{detail}"


# Each module first, in an interpreter of its own but for the dependencies: the kernels
# modules are dropped before each import (one process: 12 Numba imports would take ~20 s).
IMPORT_EACH_ALONE = """
import importlib, json, sys, traceback
failed = {}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "kernels" or m.startswith("kernels.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed[name] = traceback.format_exc().splitlines()[-1]
print(json.dumps(failed))
"""


def test_each_checker_module_imports_first_on_its_own():
    names = [f"kernels.checks.{m.name}" for m in pkgutil.iter_modules(checks.__path__)]
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    run = subprocess.run([sys.executable, "-c", IMPORT_EACH_ALONE, *names], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(names) > 5 and json.loads(run.stdout) == {}, run.stdout


PATCHES_AFTER_NUMBA = """
import sys
import kernels.grading.cli  # the grader's command line: it launches no kernel
assert "numba" not in sys.modules, "the command line imported Numba"
from kernels import checks, simulator, simulator_concurrency
from numba import cuda  # the course's patches of Numba follow its import
from numba.cuda.simulator import kernel
assert kernel.BlockManager is simulator.YieldingBlockManager
assert cuda.pinned is simulator_concurrency.pinned and "saxpy" in checks.__all__
from kernels.checks import launches

@cuda.jit(device=True)
def tenth(v):
    return v * 0.1

@cuda.jit
def scale(x, out):
    out[0] = tenth(x[0])

import numpy as np
x, out = np.array([100.3], np.float32), np.zeros(1)
before = launches.counts()
scale[1, 1](x, out)  # counted (checks.launches) and run numba-typed (simulator)
assert sum(launches.counts().values()) == sum(before.values()) + 1
assert out[0] == float(x[0]) * 0.1  # float64, as Numba types 0.1
print("ok")
"""


def test_the_command_line_spares_numba_and_the_patches_follow_its_import():
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent), NUMBA_ENABLE_CUDASIM="1")
    run = subprocess.run([sys.executable, "-c", PATCHES_AFTER_NUMBA], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr



JUDGE_CHECKS = """
import json, sys
from kernels.checks import core, registry
from kernels.grading import judge
from kernels.grading.stand_in import AnswerEnded

class Ended(core.Elsewhere):  # loaded, then ended at its first step
    kernels = {}
    def missing(self):
        return [], []
    def run(self, name, args):
        raise AnswerEnded("it ended")
    def close(self):
        pass

for exercise in registry.by_chapter(sys.argv[1]):
    passed, report, _ = judge.check(exercise, Ended())
    assert not passed, report
print(json.dumps(sorted(m for m in sys.modules if m == "numba" or m.startswith("kernels.checks."))))
"""


@pytest.mark.parametrize("chapter", sorted({ex.chapter for ex in registry.EXERCISES.values()}))
def test_the_judge_imports_only_its_chapter_s_checkers_and_numba_only_where_they_need_it(
        chapter):
    """The judge runs no kernel: it imports the chapter's checker module alone
    (kernels.grading.judge.check), so Numba's import (about 0.5 s of each notebook's
    grading on one core) is spared where the checkers need only NumPy. The mutex and
    reduction checkers read their chapter's launch (kernels.mutex, kernels.reduction:
    modules that define kernels) while they build their cases."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent), NUMBA_ENABLE_CUDASIM="1")
    run = subprocess.run([sys.executable, "-c", JUDGE_CHECKS, chapter], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout))
    topic = registry.by_chapter(chapter)[0].topic
    others = {f"kernels.checks.{ex.topic}" for ex in registry.EXERCISES.values()} - {
        f"kernels.checks.{topic}"}
    assert f"kernels.checks.{topic}" in loaded and not loaded & others, loaded
    assert ("numba" in loaded) == (chapter in ("mutex", "reduction")), loaded
