"""Device buffers that hold a known value between calls, for one-launch kernels.

A kernel whose blocks combine their results through atomics needs a zeroed total
before it starts, which costs a second launch. The one-launch versions instead add
into a buffer from ``buffer()`` that is already at its starting value: the last block
to finish copies the total out and puts the starting value back, ready for the next
call. Calls on one stream follow each other, so they never share the buffer at once
(every launcher of this package uses the default stream). ``is_last_block`` tells
a block whether it is that last one.

The fence in ``is_last_block`` is the writers' half of the pattern: each block's adds
are visible before its ticket counts. The reader needs its half too: the last block
must read the totals with atomics (``atomic.exch``, ``atomic.add(x, 0)``), as every
kernel here does, or after a fence of its own; a plain load could be served from a
stale line in its own SM's L1 cache.
"""

import numpy as np
from numba import cuda, int32

_buffers = {}


def buffer(name, initial):
    """The device array kept for `name` on the current device, holding `initial` (a
    NumPy array) when first made; the kernels that use it restore it after each call."""
    key = (name, getattr(cuda.get_current_device(), "id", 0))  # the simulator has one
    found = _buffers.get(key)
    if found is None or found.shape != initial.shape or found.dtype != initial.dtype:
        found = _buffers[key] = cuda.to_device(np.ascontiguousarray(initial))
    return found


@cuda.jit(device=True, inline=True)
def is_last_block(ticket):
    """Whether this block is the last of the grid to get here; each block's threads
    must have made their adds before calling. Every thread gets the answer."""
    last = cuda.shared.array(1, int32)
    cuda.threadfence()  # this thread's adds reach every SM before the ticket is taken
    cuda.syncthreads()  # every thread of the block has added and fenced
    if cuda.threadIdx.x == 0:
        last[0] = cuda.atomic.add(ticket, 0, 1) == cuda.gridDim.x - 1
    cuda.syncthreads()
    return last[0] != 0
