"""The Numba CUDA simulator's block manager, made to yield while it waits; and page-locked
host arrays, told apart.

The simulator runs a block's threads as OS threads, and a manager thread polls them
in a loop to let them past a barrier once all of them wait at it. Numba's loop never
lets go of the GIL between polls, so while the threads it waits for need the GIL (a
thread holding an atomic's lock, the last ones on their way to a barrier), it polls
for a whole switch interval each time it gets it: a split-k matmul launch of 256-thread
blocks took 3 to 7 times the CPU time of the same launch with the manager below, which
is Numba's (numba-cuda 0.30) but for one `time.sleep(0)` per poll, as the tracer's own
loop has (kernels.trace.blocks). What threads run, and in what order blocks run, is
unchanged. Importing this module installs it on the simulator (`import kernels` does,
once numba.cuda is imported).

On the simulator a pinned array (cuda.pinned_array, pinned_array_like, or one inside
`with cuda.pinned(...)`) is ordinary memory. The tracer needs to know which host
arrays CUDA would page-lock: a copy from a stream into one returns before it is done,
while a copy into pageable memory returns when it is (kernels.trace.record). install()
notes them (page_locked); what the simulator does with them is unchanged.
"""

import contextlib
import time
import weakref

import numpy as np
from numba.cuda.simulator import kernel
from numba.cuda.simulator.cudadrv import devicearray

import kernels

_PAGE_LOCKED = {}  # id of a root array -> a weak reference to it


class YieldingBlockManager(kernel.BlockManager):
    """numba.cuda.simulator.kernel.BlockManager, yielding the GIL after each poll."""

    def run(self, grid_point, *args):
        threads = set()
        for block_point in np.ndindex(*self._block_dim):
            t = kernel.BlockThread(lambda: self._f(*args), self, grid_point, block_point,
                                   self._debug)
            t.start()
            threads.add(t)
        live, blocked = set(threads), set()
        while live:
            for t in live:
                if t.syncthreads_blocked:
                    blocked.add(t)
                elif t.exception:  # stop the others, and raise this one's error
                    for other in threads:
                        other.abort = True
                        other.syncthreads_blocked = False
                        other.syncthreads_event.set()
                    raise t.exception[0].with_traceback(t.exception[1])
            if live == blocked:  # every live thread waits at the barrier: release it
                for t in blocked:
                    t.syncthreads_blocked = False
                    t.syncthreads_event.set()
                blocked = set()
            live = {t for t in live if t.is_alive()}
            time.sleep(0)  # let the threads run
        for t in threads:  # an error set just before its thread ended
            if t.exception:
                raise t.exception[0].with_traceback(t.exception[1])


def _root(ary):
    while isinstance(getattr(ary, "base", None), np.ndarray):
        ary = ary.base
    return ary


def _note(ary):
    root = _root(ary)
    key = id(root)
    _PAGE_LOCKED[key] = weakref.ref(root, lambda _, key=key: _PAGE_LOCKED.pop(key, None))


def page_locked(ary):
    """Whether host array `ary` (or the array it views) is pinned memory."""
    root = _root(ary)
    ref = _PAGE_LOCKED.get(id(root))
    return ref is not None and ref() is root


def _noting(make):
    def made(*args, **kwargs):
        ary = make(*args, **kwargs)
        _note(ary)
        return ary
    made.__doc__, made.__name__ = make.__doc__, make.__name__
    return made


@contextlib.contextmanager
def pinned(*arrays):
    """cuda.pinned(*arrays): the arrays are page-locked inside the block."""
    for ary in arrays:
        _note(ary)
    try:
        yield
    finally:
        for ary in arrays:
            _PAGE_LOCKED.pop(id(_root(ary)), None)


def install():
    """Make the simulator's launches use YieldingBlockManager, and note pinned arrays."""
    from numba import cuda

    if kernel.BlockManager is YieldingBlockManager:
        return
    kernel.BlockManager = YieldingBlockManager
    for name in ("pinned_array", "pinned_array_like"):
        made = _noting(getattr(devicearray, name))
        setattr(devicearray, name, made)
        setattr(cuda, name, made)
    devicearray.pinned = cuda.pinned = pinned


if kernels.SIMULATOR:
    install()
