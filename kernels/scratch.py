"""Device buffers that hold a known value between calls, for one-launch kernels.

A kernel whose blocks combine their results through atomics needs a zeroed total
before it starts, which costs a second launch. The one-launch versions instead add
into a buffer from ``buffer()`` that is already at its starting value: the last block
to finish copies the total out and puts the starting value back, ready for the next
call. Calls on one stream follow each other, so they never share the buffer at once
(every launcher of this package uses the default stream). ``is_last_block`` tells
a block whether it is that last one.

``is_last_block`` holds both halves of the pattern's ordering. The writers' half: each
block fences before it takes its ticket, so its adds are visible before its ticket
counts. The reader's half: the thread that draws the last ticket fences again before
the barrier that hands the answer to its block, so the block's reads of the totals
come after every other block's adds (without it a plain load could be served from a
stale line in its own SM's L1 cache). The kernels here read the totals with atomics
(``atomic.exch``, ``atomic.add(x, 0)``) as well, because they also put the starting
value back.
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
        is_last = cuda.atomic.add(ticket, 0, 1) == cuda.gridDim.x - 1
        if is_last:
            cuda.threadfence()  # every other block's adds are seen by the reads that follow
        last[0] = is_last
    cuda.syncthreads()  # (a barrier: the fence orders the whole block's reads)
    return last[0] != 0
