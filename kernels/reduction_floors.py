"""A reference read beside the reductions and the dot product: a kernel that reads
their inputs with the launch they use and computes nothing, in a plain grid-stride
loop. It is no floor: versions that keep more loads in flight beat it (on the H200 of
2026-11-26 the sum by 13%); it says how far a reduction is from simply reading.

    read_only   reads one 1-D array (the sum, min/max) or two (the dot product) in a
                grid-stride loop, blocks x threads as given

What it leaves in `out` means nothing; every value read feeds a comparison whose
result it may write, so the compiler cannot drop the loads.
"""

import numpy as np
from numba import cuda

from kernels import validate

DTYPES = (np.int32, np.float32)
# A value to compare with, so the loads feed a result: passed in x's own dtype (a
# literal would widen each float32 comparison to float64); exact in int32 and float32.
SENTINEL = -2**27

# -------------------------------------------------------------------- kernels


@cuda.jit
def read_one_kernel(x, sentinel, out):
    hit = 0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == sentinel:
            hit = 1
    if hit:
        out[0] = 1


@cuda.jit
def read_two_kernel(x, y, sentinel, out):
    hit = 0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] - y[i] == sentinel:  # both loads, whatever the first holds
            hit = 1
    if hit:
        out[0] = 1


# ------------------------------------------------------------ host functions


def read_only(x, y=None, out=None, *, blocks, threads):
    """Read device array `x` (and `y`, of its shape and dtype, if given) with `blocks` x
    `threads`, computing nothing: the floor under a reduction of them. Returns `out`
    (one int32 on the device), whose value means nothing."""
    validate.array("x", x, dtypes=DTYPES, ndim=1)
    validate.nonempty("x", x)
    if not validate.on_device(x):
        raise TypeError("x must be a device array (cuda.to_device(x)): the floor times "
                        "reading device memory, not a copy from the host")
    if y is not None:
        validate.array("y", y, dtypes=(x.dtype,), ndim=1)
        validate.same_shape(x=x, y=y)
        validate.same_space(x=x, y=y)
    out = cuda.device_array(1, np.int32) if out is None else out
    blocks, threads = validate.launch(blocks, threads)
    sentinel = np.dtype(x.dtype).type(SENTINEL)
    if y is None:
        read_one_kernel[blocks, threads](x, sentinel, out)
    else:
        read_two_kernel[blocks, threads](x, y, sentinel, out)
    return out
