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

from kernels.grading import channel, copies

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
from kernels.grading import answers, channel, copies
answers.compile_without_device()
reader = channel.Reader(0)
while True:
    try:
        signature, description = reader.read()
    except EOFError:
        break
    try:
        answers.certify(copies.rebuild(description), signature)
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


def test_values_a_kernel_cannot_read_are_described_as_such():
    assert copies._value(object(), [])[0] == "opaque"
    assert copies._value(np.zeros(3, complex), [])[0] == "opaque"  # not the channel's
    assert copies._value(np.zeros(copies.MAX_ARRAY_BYTES + 1, np.uint8), [])[0] == "opaque"
    assert copies._value(os, [])[0] == "opaque"  # no library a kernel may use
    assert copies._value((1, np.float32(2)), [])[0] == "tuple"
