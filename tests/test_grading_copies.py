"""A kernel described where the student's code ran, made again and compiled for a GPU
where none did (kernels.grading.copies): the description crosses the channel as data,
and the certifying process reads nothing else."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda, float32, int32

import kernels
from kernels.grading import channel, copies

# The kernel copies and the launch record are the simulator's: on a GPU each kernel is
# compiled where it is launched (kernels.grading.compiled)
pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="the simulator's kernel copies")

TABLE = np.arange(5, dtype=np.float32)
SCALE = np.float32(2.0)


@cuda.jit(device=True)
def _helper(v):
    return math.sqrt(v) * SCALE


@cuda.jit
def _plain(x, n):  # a device function, a local array, an atomic, constants of each kind
    i = cuda.grid(1)
    buf = cuda.local.array(2, float32)
    if i < n:
        buf[0] = _helper(x[i]) + TABLE[i % 5]
        x[i] = buf[0]
        cuda.atomic.add(x, 0, int32(1))


def _factory(k):
    @cuda.jit
    def inner(x):
        x[0] = k + len((1, 2))
    return inner


class _Object:
    v = 1.0


_OBJECT = _Object()


@cuda.jit
def _reads_an_object(x):
    x[0] = _OBJECT.v


# The kernel of a module the notebook execs, which also replaces Numba's compile where it
# runs: made again elsewhere, the kernel is compiled by the real one, and it fails there
FORGER = """
from numba import cuda as _c
_c.compile_ptx = lambda *a, **k: None
import numba.cuda.compiler
numba.cuda.compiler.compile_ptx = lambda *a, **k: None

@_c.jit
def sixteen_bit(x):
    _c.atomic.add(x, 0, 1)
"""


def _forged():
    scope = {}
    exec(compile(FORGER, "<answers_x>", "exec"), scope)
    return scope["sixteen_bit"]


CERTIFIER = """
import sys
from kernels.grading import channel, copies, targets
targets.compile_without_device()
reader = channel.Reader(0)
while True:
    try:
        signature, description = reader.read()
    except EOFError:
        break
    try:
        targets.certify(copies.rebuild(description), signature)
        print("compiled", flush=True)
    except Exception as err:
        print(type(err).__name__, str(err)[:300].replace(chr(10), " "), flush=True)
"""


def _certified(pairs):
    """What a process where Numba targets a GPU, and no code of this test module runs,
    says of each (signature, description), read from the channel's frames."""
    frames = b"".join(channel.encode((signature, description))
                      for signature, description in pairs)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    done = subprocess.run([sys.executable, "-c", CERTIFIER], input=frames, env=env,
                          capture_output=True, timeout=300)
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(pairs), done.stderr.decode()[-2000:]
    return lines


def _description(kernel):
    function = kernel.fn if hasattr(kernel, "fn") else kernel.py_func
    return copies.describe(function)[1]


def test_kernels_made_again_from_data_compile_as_a_gpu_compiles_them():
    lines = _certified([
        ("void(float32[::1], int64)", _description(_plain)),
        ("void(int64[::1])", _description(_factory(3))),  # its closure's value copied
        ("void(float32[::1])", _description(cuda.jit(lambda x: None))),
        ("void(int16[::1])", _description(_forged())),
        ("void(float32[::1])", _description(_reads_an_object)),
    ])
    assert lines[:3] == ["compiled"] * 3, lines
    assert lines[3].startswith("TypingError") and "atomic" in lines[3], lines[3]
    assert lines[4].startswith("CannotCopy") and "`_OBJECT`" in lines[4], lines[4]


def test_a_description_holds_data_only():
    description = _description(_plain)
    frame = channel.encode(description)  # it crosses the channel as it is
    header = json.loads(frame.split(b"\n", 1)[0])
    assert header["sizes"]  # the code object travels as bytes
    kinds = {pair[0]: pair[1][0] for pair in description[3]}
    assert kinds["cuda"] == "module", kinds
    assert kinds["float32"] == "attribute" and kinds["int32"] == "attribute", kinds
    assert kinds["TABLE"] == "array" and kinds["_helper"] == "function", kinds
    helper = dict(description[3])["_helper"]
    assert helper[-1] is True  # a device function
    assert dict(helper[3])["SCALE"][0] == "number"
    assert dict(helper[3])["math"] == ["module", "math"]


def _bad(description):
    with pytest.raises(copies.CannotCopy):
        copies.rebuild(description)


def test_what_is_not_a_description_is_refused_before_numba_sees_it():
    good = _description(_plain)
    _bad(["function"])
    _bad(good[:2] + [np.zeros(9, np.uint8)] + good[3:])  # not a code object
    _bad(good[:2] + [np.frombuffer(b"junk", np.uint8)] + good[3:])
    _bad(good[:4] + [[["value", 1]]] + good[5:])  # a closure the code has no room for
    for value in (["module", "os"], ["module", "subprocess"], ["attribute", "os", "system"],
                  ["attribute", "builtins", "exec"], ["opaque", "a socket"], ["code", 1],
                  ["value", [1]]):
        scope = [pair if pair[0] != "TABLE" else ["TABLE", value] for pair in good[3]]
        _bad(good[:3] + [scope] + good[4:])


def _described(value):
    return copies._value(value, [], (), [0], 0)


def test_values_a_kernel_cannot_read_are_described_as_such():
    assert _described(object())[0] == "opaque"
    assert _described(np.zeros(3, complex))[0] == "opaque"  # not the channel's
    assert _described(np.zeros(copies.MAX_ARRAY_BYTES + 1, np.uint8))[0] == "opaque"
    assert _described(os)[0] == "namespace"  # a module: only what the code reads of it
    assert _described((1, np.float32(2)))[0] == "tuple"
    assert _described(np.zeros(3).view(np.matrix))[0] == "opaque"  # not exactly an array


class _Hooked:
    """A value whose attributes run code: describing must never read one."""

    touched = []

    def __getattr__(self, name):
        _Hooked.touched.append(name)
        raise AttributeError(name)


class _Face:
    """Shows one function's parts and calls another."""

    def __init__(self, shown, real):
        self.shown, self.real = shown, real

    def __getattr__(self, name):
        return getattr(self.shown, name)

    def __call__(self, *args):
        return self.real(*args)


def test_describing_runs_no_code_of_the_students_and_trusts_no_disguise():
    _, described = copies.describe(_Hooked())
    assert described[0] == "opaque" and _Hooked.touched == []
    assert _described(_Hooked())[0] == "opaque" and _Hooked.touched == []
    disguised = cuda.jit(_Face(_factory(1).fn, _forged().fn))
    assert copies.describe(disguised)[1][0] == "opaque"  # its function is no function
    extended = type(_plain)(_plain.fn, False, extensions=[object()])
    assert "extensions" in copies.describe(extended)[1][1]


def test_only_the_librarys_and_the_courses_own_kernels_are_trusted():
    from kernels import reduction

    assert copies.library(reduction.sum_unrolled_kernel.fn)
    assert not copies.library(_plain.fn)
    fake = {}  # a kernel of the student's compiled under a course file's name
    exec(compile("def k(x):\n    x[0] = 1\n", reduction.__file__, "exec"), fake)
    fake["k"].__module__ = "kernels.reduction"
    assert not copies.library(fake["k"])


def _pack(a, b):
    return a * 2 + b


@cuda.jit(device=True)
def _packed(a, b):
    return _PACK(a, b)


_PACK = cuda.jit(device=True)(_pack)


@cuda.jit(device=True)
def _best_of(a, b):  # calls _PACK too: a diamond, not a cycle
    return max(_PACK(a, b), _packed(b, a))


_Pair = __import__("collections").namedtuple("_Pair", ["shift", "mask"])
_PAIR = _Pair(3, 7)
_KEY = np.dtype(np.int64)


class _Bits(__import__("enum").IntEnum):
    LOW = 1
    HIGH = 2


_HELPERS = type(os)("answers_helpers")  # a module of the student's
_HELPERS.pack = _PACK
_HELPERS.SCALE = 3


@cuda.jit
def _styles(x):
    i = cuda.grid(1)
    buf = cuda.shared.array(4, _KEY)
    buf[0] = _best_of(i, _PAIR.shift) & _PAIR.mask
    if i < x.size:
        x[i] = buf[0] + _Bits.HIGH + _HELPERS.pack(i, _HELPERS.SCALE)


def test_correct_styles_are_copied_and_compile():
    """Device functions called twice (a diamond), a namedtuple constant, a dtype object,
    an IntEnum, a device function in a module of the student's: copied, compiled."""
    lines = _certified([("void(int64[::1])", _description(_styles))])
    assert lines == ["compiled"], lines


def test_the_copy_is_what_runs_on_the_simulator():
    """runnable makes the kernel that the answer process launches: Python's builtins and
    the libraries' values as they were at the start, whatever the student's code replaced
    since."""
    import builtins

    @cuda.jit
    def lengths(x):
        x[0] = len(x) + math.floor(0.5)

    key, description = copies.describe(lengths)
    real_len, real_floor = builtins.len, math.floor
    builtins.len = lambda v: 99 if "WithinKernel" in type(v).__name__ else real_len(v)
    math.floor = lambda v: 5
    try:
        made = copies.runnable(lengths[1, 1], key, description)
        x = np.zeros(3, np.int64)
        made(x)
    finally:
        builtins.len, math.floor = real_len, real_floor
    assert made is not lengths and x[0] == 3, x


_TABLE = np.arange(1 << 17, dtype=np.float32)  # 512 KiB: more than constant memory holds


@cuda.jit
def _reads_a_big_table(x):
    x[0] = _TABLE[cuda.grid(1) % 100_000]  # an index the compiler cannot fold


def test_a_kernel_whose_constant_arrays_a_gpu_cannot_hold_does_not_compile():
    """NVVM writes the PTX, and only the assembler refuses more than 64 KiB of constant
    data: the grader counts it in the PTX."""
    big = _description(_reads_a_big_table)
    lines = _certified([("void(float32[::1])", big),
                        ("void(float32[::1])", _description(_plain_table_reader))])
    assert lines[0].startswith("ValueError") and "524,288 bytes" in lines[0], lines
    assert lines[1] == "compiled", lines


@cuda.jit
def _plain_table_reader(x):
    x[0] = TABLE[cuda.grid(1) % 5]
