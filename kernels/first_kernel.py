"""A first CUDA kernel: square every element, one thread per element.

Versions (VERSIONS maps each name to its host function):
    square  copies the array to the GPU, launches the kernel, copies back
"""

import math

import numpy as np
from numba import cuda

from kernels import validate

DTYPES = (np.float32, np.float64)

# ------------------------------------------------------------------ reference


def square_reference(x):
    return x * x


# -------------------------------------------------------------------- kernels


@cuda.jit
def square_kernel(x, out):
    # this thread's element: the blocks before it, then its place in its block
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:  # the last block can reach past the end of the array
        value = x[i]  # one load from global memory
        out[i] = value * value


# ------------------------------------------------------------ host functions


def square(x, *, threads=128):
    """x * x for a 1D NumPy array, on the GPU: copy x there, launch one
    thread per element in blocks of `threads`, copy the result back."""
    if validate.on_device(x):
        raise TypeError(
            "x must be a NumPy array on the host: square() shows the copies "
            "to and from the GPU; for data already there, launch "
            "square_kernel[blocks, threads](x, out) yourself")
    validate.array("x", x, dtypes=DTYPES, ndim=1)
    validate.nonempty("x", x)
    _, threads = validate.launch(1, threads)
    blocks = math.ceil(x.size / threads)  # the fewest blocks that cover x
    if blocks > 2**31 - 1:
        raise ValueError(f"{x.size} elements need {blocks} blocks of "
                         f"{threads}; a grid has at most 2**31 - 1 blocks")
    x_device = cuda.to_device(x)  # host -> GPU copy
    out_device = cuda.device_array_like(x_device)  # GPU memory, not written
    # the launch returns at once; the GPU runs the kernel on its own
    square_kernel[blocks, threads](x_device, out_device)
    return out_device.copy_to_host()  # waits for the kernel, copies back


VERSIONS = {"square": square}
