"""Cooperative launches with every block live, so that grid.sync() is a real barrier.

Numba's simulator runs blocks one after another and a cooperative launch with one
block only (where a block barrier and a grid barrier are the same thing). Under the
tracer a kernel that calls ``cuda.cg.this_grid()`` runs instead with the threads of
all its blocks started together, each block with its own shared memory and its own
barriers, and one GridBarrier for grid.sync(). So a block barrier used where a grid
barrier is needed leaves cross-block conflicts the race analysis reports, as on a GPU.
"""

import threading
import time

import numpy as np
from numba.cuda.simulator import kernel as sim
from numba.cuda.simulator.cudadrv import devicearray

from kernels import simulator, simulator_threads, simulator_types
from kernels.trace.model import TraceError

GRID_WAIT_S = 60.0  # a grid barrier some threads never reach: said, not hung
# The largest cooperative grid the simulator offers under the tracer (Numba's own
# simulator says 1): a few blocks, enough for blocks to meet at grid barriers.
COOPERATIVE_BLOCKS = 3


def uses_grid_sync(fn, seen=None):
    """True if the Python function of a kernel (or a device function it calls) names
    this_grid: the kernel needs a cooperative launch."""
    seen = set() if seen is None else seen
    if fn in seen:
        return False
    seen.add(fn)
    names = simulator.code_names(fn.__code__)
    if "this_grid" in names:
        return True
    for name in names:
        value = fn.__globals__.get(name)
        if isinstance(value, sim.FakeCUDAKernel) and uses_grid_sync(value.fn, seen):
            return True
    return False


class GridBarrier:
    """grid.sync() for every thread of the launch."""

    def __init__(self, parties):
        self.parties = parties
        self._barrier = threading.Barrier(parties)

    @property
    def waiting(self):
        """Threads waiting at the barrier now (none while it lets the last ones out)."""
        return self._barrier.n_waiting

    def wait(self):
        try:
            self._barrier.wait(GRID_WAIT_S)
        except threading.BrokenBarrierError:
            raise TraceError("grid.sync() was abandoned: another thread failed or never "
                             "reached it") from None

    def abort(self):
        self._barrier.abort()


def run_all_blocks(dispatcher, args, on_grid_sync):
    """Launch the configured simulator kernel `dispatcher` on `args` (device arrays and
    scalars) with all blocks live. `on_grid_sync(thread)` runs in each thread once all
    threads have reached a grid.sync()."""
    grid_dim, block_dim = sim.normalize_kernel_dimensions(dispatcher.grid_dim,
                                                          dispatcher.block_dim)
    module = sim.FakeCUDAModule(grid_dim, block_dim, dispatcher.dynshared_size)
    blocks = list(np.ndindex(*grid_dim))
    barrier = GridBarrier(len(blocks) * int(np.prod(block_dim)))
    module._trace_grid_barrier = barrier
    module._trace_on_grid_sync = on_grid_sync
    fake_args = [devicearray.FakeWithinKernelCUDAArray(a)
                 if isinstance(a, devicearray.FakeCUDAArray) else a for a in args]
    with sim._push_kernel_context(module), sim.swapped_cuda_module(dispatcher.fn, module):
        managers = [sim.BlockManager(dispatcher.fn, grid_dim, block_dim, False)
                    for _ in blocks]
        fn = simulator_types.numba_typed(dispatcher.fn)
        by_block = {}
        for point, manager in zip(blocks, managers):
            by_block[point] = [
                simulator_threads.PooledThread(lambda: fn(*fake_args), manager, point, t,
                                               False)
                for t in np.ndindex(*block_dim)]
        for threads in by_block.values():
            for t in threads:
                t.start()
        _supervise(by_block, barrier)


def _supervise(by_block, barrier):
    """The simulator's BlockManager loop for all blocks at once: release a block's
    barrier when all its live threads wait at it; stop everything on an error or on a
    grid barrier that the threads still running can never fill."""
    everyone = [t for threads in by_block.values() for t in threads]
    live = {b: list(ts) for b, ts in by_block.items()}
    while live:
        for block in list(live):
            threads = live[block]
            for t in threads:
                if t.exception:
                    _abort(everyone, barrier)
                    raise t.exception[0].with_traceback(t.exception[1])
            if threads and all(t.syncthreads_blocked for t in threads):
                for t in threads:
                    t.syncthreads_blocked = False
                    t.syncthreads_event.set()
            live[block] = [t for t in threads if t.is_alive()]
            if not live[block]:
                del live[block]
        if barrier.waiting and _stranded(everyone, barrier):
            time.sleep(0.05)  # the last arrivals may be on their way into wait()
            if _stranded(everyone, barrier):
                waiting = barrier.waiting
                _abort(everyone, barrier)
                raise TraceError(
                    f"only {waiting} of the {barrier.parties} threads reached "
                    "grid.sync(); the others returned without it. Every thread of a "
                    "cooperative launch must reach every grid.sync(): on a GPU this hangs")
        time.sleep(0)
    for t in everyone:
        if t.exception:
            raise t.exception[0].with_traceback(t.exception[1])


def _stranded(threads, barrier):
    """True if every thread still running waits at the grid barrier, and they are too
    few to fill it."""
    alive = sum(t.is_alive() for t in threads)
    return 0 < barrier.waiting == alive < barrier.parties


def _abort(threads, barrier):
    barrier.abort()
    for t in threads:
        t.abort = True
        t.syncthreads_blocked = False
        t.syncthreads_event.set()
