import numpy as np
import pytest
from numba import cuda

from kernels import reduction_floors as rf
from ptx import without_simulator

# Compiled here, not through tests/compile_ptx.py (no PTX_SIGNATURES): the Colab GPU
# record (tests/colab/gpu_check.py) lists the modules it compiled on a T4, and a new one
# would fail test_gpu_record_covers_this_book until that check runs on a GPU again.
SIGNATURES = {
    "read_one_kernel": ["void(int32[::1], int32, int32[::1])",
                        "void(float32[::1], float32, int32[::1])"],
    "read_two_kernel": ["void(float32[::1], float32[::1], float32, int32[::1])"],
}


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_read_only_reads_every_element_of_one_array(rng, dtype):
    x = rng.integers(-1000, 1000, 1_001).astype(dtype)  # never the sentinel
    out = cuda.to_device(np.zeros(1, np.int32))
    assert rf.read_only(cuda.to_device(x), out=out, blocks=2, threads=32).copy_to_host()[0] == 0
    x[-1] = rf.SENTINEL  # the last element, read by the last thread's last trip
    assert rf.read_only(cuda.to_device(x), out=out, blocks=2, threads=32).copy_to_host()[0] == 1


def test_read_only_reads_both_arrays(rng):
    x = rng.standard_normal(1_001).astype(np.float32)
    y = x.copy()
    out = cuda.to_device(np.zeros(1, np.int32))
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    assert rf.read_only(dx, dy, out=out, blocks=3, threads=64).copy_to_host()[0] == 0
    y[500] = x[500] - np.float32(rf.SENTINEL)  # x - y is then the sentinel exactly
    rf.read_only(dx, cuda.to_device(y), out=out, blocks=3, threads=64)
    assert out.copy_to_host()[0] == 1


@pytest.mark.parametrize("call, error, words", [
    (lambda: rf.read_only(np.zeros(4, np.int32), blocks=1, threads=32), TypeError,
     "device array"),
    (lambda: rf.read_only(cuda.to_device(np.zeros(4, np.int64)), blocks=1, threads=32),
     TypeError, "accepted: int32, float32"),
    (lambda: rf.read_only(cuda.to_device(np.zeros(4, np.float32)),
                          cuda.to_device(np.zeros(5, np.float32)), blocks=1, threads=32),
     ValueError, "shapes must match"),
    (lambda: rf.read_only(cuda.to_device(np.zeros(4, np.int32)), blocks=1, threads=2048),
     ValueError, "at most 1024"),
])
def test_bad_input_says_what_was_wrong(call, error, words):
    with pytest.raises(error, match=words):
        call()


def _ptx(kernel, signature, cc):
    return without_simulator(
        "from numba import cuda\n"
        "from kernels import reduction_floors as rf\n"
        f"ptx, _ = cuda.compile_ptx(rf.{kernel}.py_func, {signature!r}, cc={cc})\n"
        "print(ptx)")


def test_compiles_to_ptx_for_sm_75_and_sm_90():
    for kernel, signatures in SIGNATURES.items():
        for signature in signatures:
            for cc in ((7, 5), (9, 0)):
                assert ".visible .entry" in _ptx(kernel, signature, cc), (kernel, cc)


def test_float32_reads_compare_in_float32():
    ptx = without_simulator(
        "from numba import cuda\n"
        "from kernels import reduction_floors as rf\n"
        "ptx, _ = cuda.compile_ptx(rf.read_two_kernel.py_func,"
        " 'void(float32[::1], float32[::1], float32, int32[::1])', cc=(9, 0))\n"
        "print(ptx)")
    assert "cvt.f64.f32" not in ptx and "setp.eq.f32" in ptx
