"""The kernels a host function launches, compiled for a GPU on the simulator
(kernels.grading.compiled); the grader's own runs are in tests/test_mutants.py (the
16-bit atomics that a host function launches score 0)."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels.checks import launches
from kernels.grading import compiled, copies

# The kernel copies and the launch record are the simulator's: on a GPU each kernel is
# compiled where it is launched (kernels.grading.compiled)
pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="the simulator's kernel copies")


@cuda.jit
def _add_one(x, n):  # of any shape: only its arguments' types matter here
    if x.ndim == 1 and cuda.grid(1) < n:
        x[cuda.grid(1)] += 1


def test_a_launch_is_recorded_with_the_signature_a_gpu_compiles():
    launches.record_launched(copies.describe, lambda kernel, *_: kernel, copies.library)
    try:
        _add_one[1, 32](cuda.to_device(np.zeros(5, np.int16)), 5)
        _add_one[1, 32](cuda.to_device(np.zeros((3, 4), np.float32))[:, :2], np.float32(2))
        _add_one[1, 32](np.zeros((3, 4), np.float64, order="F"), True)
        found = launches.launched()
        assert {signature for _, signature in found} == {
            "void(int16[::1], int64)", "void(float32[:, :], float32)",
            "void(float64[::1, :], boolean)"}, found
        assert {name for name, _ in found.values()} == {"_add_one"}
        assert launches.launched() == {}  # the record starts again
    finally:
        launches._launched = None


_SCALE = 1


@cuda.jit
def _scaled(x):
    x[0] = _SCALE


def test_a_kernel_is_described_as_it_was_at_each_launch():
    """What a kernel reads is described at its launch: code that changes a value after
    the launch, before the reply, does not change what is compiled; and code that
    replaces marshal's functions after the grader's modules were imported does not
    change a description."""
    global _SCALE
    launches.record_launched(copies.describe, lambda kernel, *_: kernel, copies.library)
    x = np.zeros(3, np.float32)
    try:
        _scaled[1, 1](x)
        _scaled[1, 1](x)  # nothing it reads changed: one record
        _SCALE = np.float32(2.5)
        _scaled[1, 1](x)
        found = launches.launched()
        assert sorted(str(dict(d[3])["_SCALE"]) for _, d in found.values()) == [
            "['number', np.float32(2.5)]", "['value', 1]"], found
        import marshal
        real, marshal.dumps = marshal.dumps, lambda *a, **k: b"forged"
        try:
            _, description = copies.describe(_scaled.fn)
        finally:
            marshal.dumps = real
        assert marshal.loads(description[2].tobytes()) == _scaled.fn.__code__
    finally:
        launches._launched, _SCALE = None, 1


def test_a_type_a_signature_cannot_say_gives_no_signature():
    assert launches.signature([np.zeros(3, [("a", np.int32)])]) == ""
    assert launches.signature([(1, 2)]) == ""
    assert launches.signature([np.zeros(2, bool), True]) == "void(boolean[::1], boolean)"


def test_a_launch_entry_is_read_and_one_not_well_formed_is_not_graded():
    description = ["function", "k", np.zeros(3, np.uint8), [], [], [], False]
    key, held = compiled.launched(["launched", "k", "void(int32[::1], float64)", description])
    assert key[:2] == ("k", "void(int32[::1], float64)") and held is description
    other, _ = compiled.launched(["launched", "k", "void(int32[::1], float64)",
                                  description[:2] + [np.ones(3, np.uint8)] + description[3:]])
    assert other[2] != key[2]  # two kernels of one name (a factory's) stay apart
    assert compiled.launched(["launched", "f.<locals>.<lambda>", "", description])[0][1] == ""
    assert compiled.launched(["yours", 3]) is None and compiled.launched("launched") is None
    for bad in (["launched", "k", "void(__import__('os'))", description],
                ["launched", "k; x", "void()", description], ["launched", "k", "void()"],
                ["launched", "k", "void()", {1, 2}]):
        assert compiled.launched(bad) == compiled._UNREADABLE, bad


class _Certifier:
    """A certifying process's stand-in: it compiles, or raises `error`."""

    def __init__(self, error=None):
        self.error, self.asked = error, []

    def run(self, step, args):
        self.asked.append(args)
        if self.error is not None:
            raise self.error


class _Answer:
    def __init__(self, *entries):
        self.kernels = dict(compiled.launched(["launched", *e]) for e in entries)


_KERNEL = ["function", "k", np.zeros(3, np.uint8), [], [], [], False]


def test_each_kernel_and_signature_is_compiled_and_a_compile_error_fails():
    from kernels.checks import registry

    exercise = registry.EXERCISES["reduction-ex-mean-variance"]
    answer = _Answer(("k", "void(int32[::1])", _KERNEL), ("k", "void(int64[::1])", _KERNEL))
    passes = _Certifier()
    assert compiled.certify(exercise, answer, lambda: passes) == ("", "")
    assert sorted(a[0] for a in passes.asked) == ["void(int32[::1])", "void(int64[::1])"]
    TypingError = type("TypingError", (Exception,), {})
    failed, flag = compiled.certify(exercise, answer, lambda: _Certifier(TypingError("no")))
    assert "does not compile for a GPU" in failed and "no" in failed and flag == ""


def test_what_the_grader_could_not_compile_is_not_graded_automatically():
    """Fail closed: a kernel it could not copy, name the arguments of, or compile for
    its own reasons leaves the exercise to the instructor, never passed."""
    from kernels.checks import registry

    exercise = registry.EXERCISES["reduction-ex-mean-variance"]
    never = _Certifier(AssertionError("must not be asked"))
    for answer, said in (
            (_Answer(("k", "", _KERNEL)), "cannot name"),
            (_Answer(("k", "void()", ["opaque", "a socket"])), "a socket"),
            (_Answer(*[(f"k{i}", "void()", _KERNEL)
                       for i in range(compiled.MAX_KERNELS + 1)]), "more than the 16")):
        report, flag = compiled.certify(exercise, answer, lambda: never)
        assert report.startswith("Not graded automatically") and said in report, report
        assert flag.startswith("not graded:") and said in flag, flag
    report, flag = compiled.certify(exercise, _Answer(("k", "void()", _KERNEL)),
                                    lambda: _Certifier(OSError("gone")))
    assert report.startswith("Not graded automatically") and "OSError: gone" in flag
    unreadable = _Answer()
    unreadable.kernels = dict([compiled.launched(["launched", "k; x", "void()", _KERNEL])])
    report, _ = compiled.certify(exercise, unreadable, lambda: never)
    assert report.startswith("Not graded automatically") and "could not read" in report


SHAPES = '''
import os, sys, types
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"  # Numba's compiler for a GPU (none need be here)
import numpy as np
from numba import cuda, float32
TILE = 16
red = types.ModuleType("red")
red.THREADS = 256

def expression(x):
    tile = cuda.shared.array((TILE, TILE + 2), float32)
    x[0] = tile[0, 0]

def attribute(x):
    row = cuda.local.array(red.THREADS, float32)
    x[0] = row[0]

def numpy_call(x):
    x[0] = np.ones(3)[0]  # an allocation: none on a GPU

for kernel in (expression, attribute, numpy_call):
    try:
        cuda.compile_ptx(kernel, "void(float32[::1])", cc=(7, 5))
        print("compiled")
    except Exception as err:
        print(repr(str(err)))
'''


def test_a_shape_numba_cannot_read_as_a_constant_gets_advice_on_shapes():
    """What Numba's compiler says of a shared or local array whose shape is an
    expression or another module's attribute, and of a NumPy call, each with the
    sentence after it."""
    import ast
    import subprocess
    import sys

    said = subprocess.run([sys.executable, "-c", SHAPES], capture_output=True, text=True,
                          check=True, timeout=300).stdout.splitlines()
    expression, attribute, numpy_call = (compiled.advice(ast.literal_eval(s)) for s in said)
    assert expression.startswith("A shared array's shape must be an integer constant")
    assert attribute.startswith("A local array's shape must be an integer constant")
    assert "(PADDED = TILE + 2)" in expression
    assert "not NumPy's functions or Python objects" in numpy_call
