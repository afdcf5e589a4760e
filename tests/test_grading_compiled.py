"""The kernels a host function launches, compiled for a GPU on the simulator
(kernels.grading.compiled); the grader's own runs are in tests/test_mutants.py (the
16-bit atomics that a host function launches score 0)."""

import numpy as np
from numba import cuda

from kernels.checks import launches
from kernels.grading import compiled, extract


@cuda.jit
def _add_one(x, n):  # of any shape: only its arguments' types matter here
    if x.ndim == 1 and cuda.grid(1) < n:
        x[cuda.grid(1)] += 1


def test_a_launch_is_recorded_with_the_signature_a_gpu_compiles():
    launches.record_launched()
    try:
        _add_one[1, 32](cuda.to_device(np.zeros(5, np.int16)), 5)
        _add_one[1, 32](cuda.to_device(np.zeros((3, 4), np.float32))[:, :2], np.float32(2))
        _add_one[1, 32](np.zeros((3, 4), np.float64, order="F"), True)
        found = launches.launched()
        assert found == {_add_one.py_func: {"void(int16[::1], int64)",
                                             "void(float32[:, :], float32)",
                                             "void(float64[::1, :], boolean)"}}, found
        assert launches.launched() == {}  # the record starts again
    finally:
        launches._launched = None


def test_a_type_a_signature_cannot_say_gives_no_signature():
    assert launches.signature([np.zeros(3, [("a", np.int32)])]) == ""
    assert launches.signature([(1, 2)]) == ""
    assert launches.signature([np.zeros(2, bool), True]) == "void(boolean[::1], boolean)"


def test_only_well_formed_entries_reach_the_certifying_process():
    good = ["launched", "__main__", "kernel", "void(int32[::1], float64)"]
    assert compiled.launched(good) == ("__main__", "kernel", "void(int32[::1], float64)")
    assert compiled.launched(["launched", "answers_x", "f.<locals>.k", ""]) == \
        ("answers_x", "f.<locals>.k", "")
    assert compiled.launched(["launched", "@host", "k", "void()"]) == ("@host", "k", "void()")
    for bad in (["launched", "__main__", "kernel", "void(__import__('os'))"],
                ["launched", "__main__", "k; x", "void()"],
                ["launched", "__main__", "kernel"], ["yours", 3], "launched"):
        assert compiled.launched(bad) is None, bad


CELLS = ['''
import numpy as np
from numba import cuda
''', '''
@cuda.jit
def plain(x):
    x[0] = 1
''', '''
made = cuda.jit(lambda x: None)
''', '''
@cuda.jit
def odd(x):
    x[0] = 1
odd = wrap(odd)
''', '''
def host(x):
    plain[1, 1](x)
    made[1, 1](x)
    odd[1, 1](x)
''']


def test_the_kernels_a_host_function_needs_are_found_and_judged_by_their_definitions():
    found, _ = extract.statements(
        [{"cell_type": "code", "source": source} for source in CELLS])
    kernels = compiled.kernels(found, ["host"])
    assert kernels["plain"] == "" and "made" in kernels, kernels
    assert kernels.get("odd"), kernels  # wrapped by code of the student's
    assert compiled.needs_own(found, ["host"])  # odd: only a process of its own loads it
    plain_only, _ = extract.statements([{"cell_type": "code", "source": source} for source
                                        in CELLS[:2] + ["def host(x):\n    plain[1, 1](x)"]])
    assert compiled.kernels(plain_only, ["host"]) == {"plain": ""}
    assert not compiled.needs_own(plain_only, ["host"])


def test_a_string_that_holds_a_kernel_s_source_is_no_kernel():
    """A module's source kept in a string (exec'd into a module) names cuda.jit in its
    text only: no certifying process is started for the string."""
    source = ["from numba import cuda\n",
              "SOURCE = '@cuda.jit\\ndef k(x):\\n    x[0] = 1\\n'\n",
              "def host(x):\n    ns = {}\n    exec(SOURCE, ns)\n    ns['k'][1, 1](x)\n"]
    found, _ = extract.statements([{"cell_type": "code", "source": s} for s in source])
    assert compiled.kernels(found, ["host"]) == {}


class _Certifier:
    """A certifying process's stand-in: it compiles, or raises `error`."""

    def __init__(self, error=None):
        self.error, self.asked = error, 0

    def missing(self):
        return [], []

    def run(self, step, args, subject):
        self.asked += 1
        if self.error is not None:
            raise self.error


class _Answer:
    kernels = {("answers_x", "k", "void(int32[::1])")}


def test_a_kernel_goes_to_the_next_certifier_and_the_last_ones_word_stands():
    from kernels.checks import registry

    exercise = registry.EXERCISES["reduction-ex-mean-variance"]
    TypingError = type("TypingError", (Exception,), {})
    shared_fails, own_passes = _Certifier(TypingError("refused")), _Certifier()
    assert compiled.certify(exercise, _Answer(), None, {},
                            [lambda: shared_fails, lambda: own_passes]) == ("", "")
    assert (shared_fails.asked, own_passes.asked) == (1, 1)
    passes, never = _Certifier(), _Certifier(TypingError("unused"))
    assert compiled.certify(exercise, _Answer(), None, {},
                            [lambda: passes, lambda: never]) == ("", "")
    assert never.asked == 0  # the first one's pass is enough
    failed, limit = compiled.certify(exercise, _Answer(), None, {},
                                     [lambda: _Certifier(TypingError("a")),
                                      lambda: _Certifier(TypingError("no GPU typing"))])
    assert "does not compile for a GPU" in failed and "no GPU typing" in failed
    _, limit = compiled.certify(exercise, _Answer(), None, {},
                                [lambda: _Certifier(OSError("gone"))])
    assert "was not compiled for a GPU: compiling it raised OSError: gone" in limit
