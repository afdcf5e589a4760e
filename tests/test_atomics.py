import re

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import atomics as a
from kernels.harness import check
from ptx import assert_compiles

PTX_SIGNATURES = {
    "increment_racy_kernel": ["void(int32[::1], int64)", "void(int64[::1], int64)"],
    "increment_atomic_kernel": ["void(int32[::1], int64)", "void(int64[::1], int64)"],
}


def test_the_classic_demo_counts_160_atomically():
    counts = np.zeros(1, np.int32)
    assert a.increment_atomic(counts)[0] == 160


@pytest.mark.parametrize("counters", [1, 3, 32])
@pytest.mark.parametrize("increments", [0, 1, 1001])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_atomic_matches_reference(counters, increments, dtype):
    counts = np.zeros(counters, dtype)
    check(a.increment_atomic(counts, increments, blocks=3, threads=33),
          a.increment_reference(increments, counters))


def test_atomic_adds_to_what_is_there():
    counts = cuda.to_device(np.full(5, 7, np.int64))
    a.increment_atomic(counts, 100, blocks=2, threads=16)
    check(counts, 7 + a.increment_reference(100, 5))


@pytest.mark.skipif(not kernels.SIMULATOR, reason="the simulator runs blocks one at a time")
def test_racy_is_right_only_on_the_simulator():
    """The simulator runs one block at a time, and a thread's read and write
    without another thread of its block in between, so no update is lost here.
    On a GPU the same launch loses most of them (test_racy_loses_updates_on_gpu)."""
    assert a.increment_racy(np.zeros(1, np.int32))[0] == 160


BAD_CALLS = {
    "float counters": (lambda: a.increment_atomic(np.zeros(1, np.float32)), TypeError,
                       "accepted: int32, int64"),
    "2-D counters": (lambda: a.increment_atomic(np.zeros((1, 1), np.int32)), ValueError, "1-D"),
    "empty counters": (lambda: a.increment_racy(np.zeros(0, np.int32)), ValueError, "empty"),
    "negative increments": (lambda: a.increment_atomic(np.zeros(1, np.int32), -1), ValueError,
                            "at least 0"),
    "float increments": (lambda: a.increment_racy(np.zeros(1, np.int32), 2.0), TypeError,
                         "increments must be an int"),
    "zero blocks": (lambda: a.increment_atomic(np.zeros(1, np.int32), blocks=0), ValueError,
                    "blocks must be at least 1"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case):
    call, error, words = BAD_CALLS[case]
    with pytest.raises(error, match=re.escape(words)):
        call()


def test_compiles_to_ptx():
    assert_compiles("atomics")


@pytest.mark.gpu
def test_racy_loses_updates_on_gpu():
    counts = cuda.device_array(1, np.int32)
    finals = []
    for _ in range(20):
        counts.copy_to_device(np.zeros(1, np.int32))
        finals.append(int(a.increment_racy(counts, blocks=1024, threads=256).copy_to_host()[0]))
    assert max(finals) < 1024 * 256, "262,144 racing threads lost no update in 20 runs"


@pytest.mark.gpu
def test_atomic_never_loses_on_gpu():
    counts = cuda.device_array(4, np.int64)
    for _ in range(5):
        counts.copy_to_device(np.zeros(4, np.int64))
        check(a.increment_atomic(counts, 1 << 20, blocks=264, threads=256),
              a.increment_reference(1 << 20, 4))
