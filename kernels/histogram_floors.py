"""The floors under the histogram versions: kernels that read the text as the versions
do and count nothing. A histogram cannot beat the pass that reads the way it reads.

    read_only       reads every byte as versions 3 and 4 do (4-byte loads), after the
                    clearing launch they need
    read_only_wide  reads every byte as histogram_last_block and the later versions do
                    (8-byte loads, four in flight), in one launch

What they leave in `out` means nothing; each makes its loads depend on the data, so
the compiler cannot drop them.
"""

import numpy as np
from numba import cuda, uint64

from kernels.histogram import IN_FLIGHT, _args, _words

# -------------------------------------------------------------------- kernels


@cuda.jit
def read_only_kernel(words, data, out):
    seen = 0
    for i in range(cuda.grid(1), words.size, cuda.gridsize(1)):
        seen |= words[i]
    for i in range(4 * words.size + cuda.grid(1), data.size, cuda.gridsize(1)):
        seen |= data[i]
    if seen == 0xFFFFFFFF:  # depends on the data, so the loads cannot be skipped
        out[0] = 1


@cuda.jit
def read_only_wide_kernel(words, data, out):
    seen = uint64(0)
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + (IN_FLIGHT - 1) * stride < words.size:
        seen |= words[i] | words[i + stride] | words[i + 2 * stride] | words[i + 3 * stride]
        i += IN_FLIGHT * stride
    while i < words.size:
        seen |= words[i]
        i += stride
    for i in range(8 * words.size + cuda.grid(1), data.size, stride):
        seen |= data[i]
    if seen == uint64(0xFFFFFFFFFFFFFFFF):  # depends on the data: the loads stay
        out[0] = 1


# ------------------------------------------------------------ host functions


def read_only(data, out=None, *, blocks=None, threads=None):
    """Clear `out` and read `data` as the wide-load versions do, counting nothing: the
    floor under every version. What it leaves in `out` means nothing."""
    out, blocks, threads = _args("read_only", data, out, blocks, threads)
    read_only_kernel[blocks, threads](*_words(data), out)
    return out


def read_only_wide(data, out=None, *, blocks=None, threads=None):
    """Read `data` as histogram_last_block does, in one launch, counting nothing: its
    floor. What it leaves in `out` means nothing."""
    out, blocks, threads = _args("read_only_wide", data, out, blocks, threads, clear=False)
    read_only_wide_kernel[blocks, threads](*_words(data, np.uint64), out)
    return out
