"""Grid-stride loops: decoupling the launch configuration from the problem size.

Versions (VERSIONS maps each name to its host function):
    vector_add_one_per_element  one thread per element; the grid must cover the array
    vector_add_gridstride       1D grid-stride loop; any grid covers any size
Beside them:
    matrix_add_gridstride_2d    2D grid-stride loop over rows and columns
"""

import math

import numpy as np
from numba import cuda

from kernels import SIMULATOR, validate

DTYPES = (np.float32, np.float64, np.int32, np.int64)

# ------------------------------------------------------------------ reference


def vector_add_reference(a, b):
    return np.add(a, b)


def matrix_add_reference(a, b):
    return np.add(a, b)


# -------------------------------------------------------------------- kernels


@cuda.jit
def vector_add_one_per_element_kernel(a, b, out):
    i = cuda.grid(1)
    if i < out.size:  # the last block sticks out past the end of the array
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_gridstride_kernel(a, b, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)  # threads in the whole grid
    for i in range(start, out.size, stride):
        out[i] = a[i] + b[i]


@cuda.jit
def matrix_add_gridstride_2d_kernel(a, b, out):
    col0, row0 = cuda.grid(2)  # x runs along a row, so neighbours share a row
    col_stride, row_stride = cuda.gridsize(2)
    for row in range(row0, out.shape[0], row_stride):
        for col in range(col0, out.shape[1], col_stride):
            out[row, col] = a[row, col] + b[row, col]


# ------------------------------------------------------------ host functions


def sm_count():
    """Streaming multiprocessors on this GPU (the simulator reports 1)."""
    return 1 if SIMULATOR else cuda.get_current_device().MULTIPROCESSOR_COUNT


def default_blocks():
    """Blocks for a grid-stride launch: 32 per SM, with the SM count read from the device.

    With 256 threads a block that is 8,192 threads per SM, at least four times what one
    SM of any NVIDIA GPU holds at once (`hardware.max_threads_per_sm`: at most 2,048,
    1,024 on a T4), so every SM starts full whatever the GPU; the blocks beyond that wait
    their turn, which costs little (the chapter's blocks-per-SM sweep measures it), and
    the grid-stride loop covers whatever elements the grid does not."""
    return 32 * sm_count()


def _vector_args(a, b, out):
    validate.array("a", a, dtypes=DTYPES, ndim=1)
    validate.array("b", b, dtypes=a.dtype, ndim=1)
    validate.same_shape(a=a, b=b)
    validate.same_space(a=a, b=b)
    validate.nonempty("a", a)
    return validate.output("out", out, a)


def vector_add_one_per_element(a, b, out=None, *, threads=256):
    """out = a + b with one thread per element: blocks = ceil(n / threads)."""
    out = _vector_args(a, b, out)
    _, threads = validate.launch(1, threads)
    blocks = math.ceil(out.size / threads)
    if blocks > 2**31 - 1:
        raise ValueError(f"{out.size} elements need {blocks} blocks of {threads}; "
                         "a grid has at most 2**31 - 1 blocks: use the grid-stride version")
    vector_add_one_per_element_kernel[blocks, threads](a, b, out)
    return out


def vector_add_gridstride(a, b, out=None, *, blocks=None, threads=256):
    """out = a + b with a grid-stride loop; any blocks x threads covers any size."""
    out = _vector_args(a, b, out)
    blocks, threads = validate.launch(default_blocks() if blocks is None else blocks, threads)
    vector_add_gridstride_kernel[blocks, threads](a, b, out)
    return out


def matrix_add_gridstride_2d(a, b, out=None, *, blocks=None, threads=(32, 8)):
    """out = a + b for 2D arrays with a 2D grid-stride loop.

    `blocks` and `threads` are (x, y) pairs; x runs along columns."""
    validate.array("a", a, dtypes=DTYPES, ndim=2)
    validate.array("b", b, dtypes=a.dtype, ndim=2)
    validate.same_shape(a=a, b=b)
    validate.same_space(a=a, b=b)
    validate.nonempty("a", a)
    out = validate.output("out", out, a)
    if blocks is None:
        blocks = (8, 4 * sm_count())
    for name, pair in (("blocks", blocks), ("threads", threads)):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"{name} must be an (x, y) tuple of two ints, got {pair!r}")
    validate.launch(blocks[0] * blocks[1], threads[0] * threads[1])
    for b_, t_ in zip(blocks, threads):
        validate.launch(b_, t_)
    matrix_add_gridstride_2d_kernel[blocks, threads](a, b, out)
    return out


VERSIONS = {
    "vector_add_one_per_element": vector_add_one_per_element,
    "vector_add_gridstride": vector_add_gridstride,
}
