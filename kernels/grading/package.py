"""The copies of `kernels` that a student's processes import: without the solutions.

The files are read into memory once, when grading starts, and written afresh into
each submission's private folder. So a notebook finds no ``kernels.solutions`` to
import, and one that rewrites the package's files changes only its own copy: the next
submission gets the files as they were when grading started. The process that runs
the whole notebook (kernels.grading.worker) gets the checkers, which the notebook
calls; the processes that answer the judge (kernels.grading.answers) get a copy
without the checkers' deciding half (answer_side): of kernels.checks only the answer
steps and what they import, so no case, reference or comparison is there to be found,
in memory or on disk.
"""

import importlib.util
import marshal
import pathlib

import kernels
from kernels import harness

EXCLUDED = ("solutions", "__pycache__")  # the answer key, and bytecode of this process
# What the answer processes import of kernels.checks: the answer steps, the launch
# record and its input swap, the exercise table (kernels.grading.submissions reads it),
# the package's init
ANSWER_SIDE = ("__init__", "steps", "launches", "swaps", "registry")


def files():
    """{path relative to the folder that holds `kernels`: bytes} of the package to copy."""
    root = pathlib.Path(kernels.__file__).resolve().parent
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not set(rel.parts) & set(EXCLUDED) and path.suffix != ".pyc":
            found[pathlib.PurePosixPath("kernels", *rel.parts)] = path.read_bytes()
    # In a checkout the recordings live with the book; the copy carries them as an
    # installed package does (kernels/recordings, where harness looks next).
    for path in sorted(pathlib.Path(harness.recording.BENCH_DIR).glob("*.json")):
        found.setdefault(pathlib.PurePosixPath("kernels", "recordings", path.name),
                         path.read_bytes())
    return found


def answer_side(package_files):
    """`package_files` without the modules of kernels.checks that decide (all but
    ANSWER_SIDE), sources and bytecode alike."""
    def kept(rel):
        parts = rel.parts
        if parts[:2] != ("kernels", "checks") or len(parts) < 3:
            return True
        return parts[-1].split(".")[0] in ANSWER_SIDE
    return {rel: data for rel, data in package_files.items() if kept(rel)}


def with_bytecode(package_files):
    """`package_files` and, beside each module, its .pyc for this Python, checked against
    the source's hash when imported (PEP 552), not its time: the copy is read-only in the
    sandbox, so without them every process of the student's compiled the whole package
    again (0.3 s of CPU each); a source rewritten where the copy is writable (no
    sandbox) is compiled afresh."""
    flags = (0b11).to_bytes(4, "little")  # hash-based, checked
    found = dict(package_files)
    for rel, source in package_files.items():
        if rel.suffix == ".py":
            code = compile(source, str(rel), "exec", dont_inherit=True)
            found[pathlib.PurePosixPath(importlib.util.cache_from_source(str(rel)))] = (
                importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source)
                + marshal.dumps(code))
    return found


def write(package_files, folder):
    """Write the package into `folder` (to go first on the worker's sys.path)."""
    folder = pathlib.Path(folder)
    for rel, data in package_files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder
