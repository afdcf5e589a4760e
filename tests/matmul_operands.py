"""The matmul tests' operands and their check: float32 matrices of a given shape, and a
product compared with the float64 one within the tolerance its sizes allow."""

import numpy as np

from kernels import matmul as mm
from kernels.harness import check


def operands(rng, m, k, n):
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def assert_product(c, a, b, name="c"):
    rtol, atol = mm.tolerance(a, b)
    check(c, mm.matmul_float64(a, b), name=name, rtol=rtol, atol=atol)
