import re

import numpy as np
import pytest
from numba import cuda

from kernels import first_kernel as f
from kernels import trace
from kernels.harness import check
from kernels.trace import analyses
from ptx import assert_compiles

PTX_SIGNATURES = {
    "square_kernel": ["void(float32[::1], float32[::1])", "void(float64[::1], float64[::1])"],
}


@pytest.mark.parametrize("n, threads", [(1, 128), (127, 128), (129, 128), (1001, 32),
                                        (5, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_square_matches_numpy(n, threads, dtype, rng):
    x = (rng.random(n) * 10 - 5).astype(dtype)
    out = f.square(x, threads=threads)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    check(out, f.square_reference(x))


def test_one_thread_writes_each_element_once_and_the_tail_stays_out(rng):
    """10 elements, blocks of 4: three blocks, and the last two threads write nothing."""
    x = rng.random(10).astype(np.float32)
    t = trace.run(f.square, x, threads=4)
    assert (t.launch().grid[0], t.launch().block[0]) == (3, 4)
    cov = analyses.coverage(t, "out")
    assert cov.missed == [] and cov.repeated == []
    assert cov.thread.tolist() == list(range(10))  # element i by global thread i
    assert cov.block.tolist() == [0] * 4 + [1] * 4 + [2] * 2


def test_the_kernel_leaves_elements_past_its_grid_alone(rng):
    x = rng.random(10).astype(np.float32)
    out = np.full(10, -1, np.float32)
    f.square_kernel[2, 4](x, out)  # 8 threads for 10 elements
    check(out[:8], x[:8] * x[:8])
    assert (out[8:] == -1).all()


BAD_CALLS = {
    "list": (lambda x: f.square([1.0, 2.0]), TypeError, "x must be a NumPy array"),
    "int dtype": (lambda x: f.square(x.astype(np.int32)), TypeError,
                  "x has dtype int32; accepted: float32, float64"),
    "2-D": (lambda x: f.square(x.reshape(3, 7)), ValueError, "x must be 1-D"),
    "empty": (lambda x: f.square(x[:0]), ValueError, "x is empty"),
    "strided": (lambda x: f.square(x[::2]), ValueError, "x must be C-contiguous"),
    "threads 0": (lambda x: f.square(x, threads=0), ValueError, "threads must be at least 1"),
    "threads 2048": (lambda x: f.square(x, threads=2048), ValueError,
                     "threads must be at most 1024"),
    "threads float": (lambda x: f.square(x, threads=32.0), TypeError, "threads must be an int"),
    "on device": (lambda x: f.square(cuda.to_device(x)), TypeError,
                  "x must be a NumPy array on the host"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    with pytest.raises(error, match=re.escape(words)):
        call(rng.random(21).astype(np.float32))


def test_compiles_to_ptx():
    assert_compiles("first_kernel")


@pytest.mark.gpu
def test_full_size_on_gpu():
    x = np.random.default_rng(3).random(20_000_001, dtype=np.float32)
    check(f.square(x, threads=256), x * x)
