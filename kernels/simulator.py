"""The Numba CUDA simulator's block manager, made to yield while it waits and to run the
threads of a kernel that never waits for another thread one after another; page-locked
host arrays, told apart; and fresh shared and local memory that holds garbage, as a
GPU's does.

The simulator runs a block's threads as OS threads, and a manager thread polls them
in a loop to let them past a barrier once all of them wait at it. Numba's loop never
lets go of the GIL between polls, so while the threads it waits for need the GIL (a
thread holding an atomic's lock, the last ones on their way to a barrier), it polls
for a whole switch interval each time it gets it: a split-k matmul launch of 256-thread
blocks took 3 to 7 times the CPU time of the same launch with the manager below, which
is Numba's (numba-cuda 0.30) but for one `time.sleep(0)` per poll, as the tracer's own
loop has (kernels.trace.blocks). What threads run, and in what order blocks run, is
unchanged.

Starting an OS thread costs about 0.1 ms, most of a simple kernel's time on the
simulator (a grid-stride chapter starts some 20,000). A thread of a kernel that names
no barrier, warp or grid operation and loops only with `for` (a `while` loop may spin
until another thread acts), nor calls a function that does (runs_in_turn), never waits
for another: each thread then runs from start to end, one after another, in the
launching thread, which the simulator's kernel API takes for the CUDA thread
(threading.current_thread). Such a kernel's result cannot depend on the order, unless
it races, which the tracer (kernels.trace), under which every CUDA thread runs on an
OS thread of its own as before, is there to tell. Those OS threads are started once and
reused (kernels.simulator_threads).

While a block whose threads cannot spin runs as OS threads (no `while` loop, no
compare-and-swap or exchange, no nanosleep in the kernel or a function it reaches;
barriers allowed), Python switches between them every COARSE_SWITCH_S, not every 5 ms
(its default): each thread then runs to its barrier or its end in fewer turns, and the
threads waiting for the GIL wake less often (test_matmul_tuned's simulator runs took
about 30% less CPU time). A thread that spins on a lock would hold the GIL for a whole
interval each turn while the thread it waits for cannot run, so such a block, and any
launch beside it in another thread, keeps the interval as it was; so does a trace.

Importing this module installs all this on the simulator (`import kernels` does, once
numba.cuda is imported).

A GPU takes a lock for one of the threads that try at once, and a copy into pinned
host memory from a stream is not done when it returns; the simulator would hide both
(kernels.simulator_concurrency, which install() installs).

A GPU's shared and local arrays start with whatever the memory held; the simulator's
start as NumPy's np.empty or np.zeros left them, often zeros, so a kernel that reads
an element before any thread wrote it (a tree over more slots than threads, say) passes
there and fails on a GPU. install() gives each new array a byte pattern instead
(garbage): a correct kernel never reads it.

Numba types a float literal as float64, and compiles a kernel declared with signatures
for those types only; the simulator does neither unless told (kernels.simulator_types,
which install() applies to every launch and device call).

Where the simulator lacks a GPU's per-block limits (its device object has only a
compute capability), install() gives its device those of every GPU since compute
capability 5.0, as `cuda.get_current_device().MAX_THREADS_PER_BLOCK` reads them:
1,024 threads, 48 KiB of static shared memory, warps of 32.
"""

import contextlib
import dis
import functools
import itertools
import sys
import threading
import time
import types as pytypes

import numpy as np
from numba.cuda.simulator import api, kernel, kernelapi
from numba.core import types
from numba.cuda.simulator.cudadrv import devices
from numba.np import numpy_support

import kernels
from kernels import simulator_concurrency, simulator_threads
from kernels.simulator_types import declared_launch, declaring_jit, numba_typed

# the per-block limits of every GPU since compute capability 5.0 (the simulator's is 5.2)
DEVICE_LIMITS = {"MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024,
                 "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64,
                 "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024, "WARP_SIZE": 32}


class YieldingBlockManager(kernel.BlockManager):
    """numba.cuda.simulator.kernel.BlockManager, yielding the GIL after each poll,
    running a block's threads in turn where none can wait (runs_in_turn), and running
    the kernel numba_typed."""

    def __init__(self, f, *args):
        super().__init__(numba_typed(f), *args)

    def run(self, grid_point, *args):
        simulator_concurrency.block_starts(traced=bool(_EVERY_THREAD_ITS_OWN))
        if _SHUFFLING:
            grid_point = _shuffled(self._grid_dim, grid_point)
        if not self._debug and not _EVERY_THREAD_ITS_OWN and runs_in_turn(self._f):
            return self._run_in_turn(grid_point, args)
        coarse = not _EVERY_THREAD_ITS_OWN and runs_in_turn(self._f, waits=_SPINS)
        with _switching(coarse):
            self._run_threads(grid_point, args)

    def _run_threads(self, grid_point, args):
        threads = set()
        for block_point in np.ndindex(*self._block_dim):  # on the pool's OS threads
            t = simulator_threads.PooledThread(lambda: self._f(*args), self, grid_point,
                                               block_point, self._debug)
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


    def _run_in_turn(self, grid_point, args):
        """Each thread of the block to its end, one after another, in this OS thread."""
        me = threading.get_ident()
        launching = threading._active.get(me)
        try:
            for block_point in np.ndindex(*self._block_dim):
                threading._active[me] = InTurn(self._block_dim, grid_point, block_point)
                try:
                    self._f(*args)
                except Exception as err:  # said as Numba's threads say it
                    where = f"tid={list(block_point)} ctaid={list(grid_point)}"
                    try:
                        said = type(err)(f"{where}: {err}" if str(err) else where)
                    except Exception:
                        raise err from None
                    raise said.with_traceback(err.__traceback__) from None
        finally:
            if launching is None:
                threading._active.pop(me, None)
            else:
                threading._active[me] = launching


class InTurn:
    """What the simulator's kernel API asks of the running CUDA thread (as
    kernel.BlockThread has it), for a thread run in turn in the launching OS thread."""

    name = "CUDA thread (in turn)"
    daemon = True

    def __init__(self, block_dim, block_idx, thread_idx):
        self.blockIdx = kernel.Dim3(*block_idx)
        self.threadIdx = kernel.Dim3(*thread_idx)
        x, y, _ = block_dim
        self.thread_id = thread_idx[0] + x * (thread_idx[1] + y * thread_idx[2])


_EVERY_THREAD_ITS_OWN = 0  # while above 0 (a trace), every thread is an OS thread
COARSE_SWITCH_S = 0.05  # sys.setswitchinterval while only blocks that cannot spin run
_SPINS = ("cas", "compare_and_swap", "exch", "nanosleep")  # what a lock spins with
# launches running their threads now, by whether they cannot spin; the interval before
_SWITCHING = {True: 0, False: 0, "before": None}
_SWITCHING_LOCK = threading.Lock()
# Names of what waits for other threads: barriers, warp votes and shuffles, grid groups
_WAITS = ("sync", "shfl", "vote", "match", "activemask", "lanemask", "this_grid", "cg",
          "nanosleep")
_PLAIN_MODULES = ("math", "cmath", "operator", "numpy", "numba")


@contextlib.contextmanager
def _switching(coarse):
    """Within it, one launch's block runs its threads: Python switches between threads
    every COARSE_SWITCH_S while every block running (in any thread) is `coarse`, and as
    before otherwise."""
    with _SWITCHING_LOCK:
        if not _SWITCHING[True] + _SWITCHING[False]:
            _SWITCHING["before"] = sys.getswitchinterval()
        _SWITCHING[coarse] += 1
        _set_switch_interval()
    try:
        yield
    finally:
        with _SWITCHING_LOCK:
            _SWITCHING[coarse] -= 1
            _set_switch_interval()


def _set_switch_interval():
    coarse = _SWITCHING[True] and not _SWITCHING[False]
    sys.setswitchinterval(COARSE_SWITCH_S if coarse else _SWITCHING["before"])


@contextlib.contextmanager
def every_thread_its_own():
    """Within it, every CUDA thread is an OS thread (the tracer's interleavings)."""
    global _EVERY_THREAD_ITS_OWN
    _EVERY_THREAD_ITS_OWN += 1
    try:
        yield
    finally:
        _EVERY_THREAD_ITS_OWN -= 1


_SHUFFLING = 0  # while above 0, each launch runs its blocks in a shuffled order
_ORDER = threading.local()  # the launching thread's current launch: its order of blocks


@contextlib.contextmanager
def blocks_shuffled(seed=0):
    """Within it, each launch runs its blocks in an order drawn from `seed`'s stream, not
    in index order: a GPU promises no order, and an answer that needs one (ties that go
    to block 0 because it always came first) is wrong there."""
    global _SHUFFLING
    _ORDER.draw = np.random.default_rng(seed).permutation
    _SHUFFLING += 1
    try:
        yield
    finally:
        _SHUFFLING -= 1


def _shuffled(grid_dim, grid_point):
    """The block to run where the simulator runs `grid_point`: the launch visits every
    grid point once, in index order, so a permutation drawn at its first runs each
    block once."""
    flat = int(np.ravel_multi_index(grid_point, grid_dim))
    if flat == 0 or getattr(_ORDER, "grid_dim", None) != grid_dim:
        _ORDER.grid_dim = grid_dim
        _ORDER.blocks = getattr(_ORDER, "draw", np.random.permutation)(int(np.prod(grid_dim)))
    return tuple(int(i) for i in np.unravel_index(_ORDER.blocks[flat], grid_dim))


@functools.lru_cache(maxsize=4096)
def _code_waits(code, waits=_WAITS):
    """Whether a code object (or one nested in it) names something in `waits` or loops
    back anywhere but to a `for` loop's head."""
    if any(w in name for name in code.co_names for w in waits):
        return True
    instructions = list(dis.get_instructions(code))
    heads = {i.offset for i in instructions if i.opname == "FOR_ITER"}
    for i in instructions:
        backward = "BACKWARD" in i.opname or (i.opname == "JUMP_ABSOLUTE"
                                              and i.argval <= i.offset)
        if backward and i.argval not in heads:
            return True
    return any(_code_waits(c, waits) for c in code.co_consts
               if isinstance(c, pytypes.CodeType))


def runs_in_turn(fn, seen=None, waits=_WAITS):
    """Whether no thread of kernel `fn` can wait for another (see the module docstring):
    neither `fn` nor a function it reaches names a barrier, a warp or grid operation,
    or has a `while` loop, and every module it reaches is one whose functions do not
    wait (math, NumPy, Numba's cuda). With `waits=_SPINS`, whether none can spin: the
    same but that barriers and warp or grid operations are allowed."""
    seen = set() if seen is None else seen
    if fn in seen:
        return True
    seen.add(fn)
    code = getattr(fn, "__code__", None)
    if code is None or _code_waits(code, waits):
        return False
    cells = [c.cell_contents for c in (fn.__closure__ or ()) if _filled(c)]
    for value in [fn.__globals__.get(n) for n in code_names(code)] + cells:
        if isinstance(value, kernel.FakeCUDAKernel):
            value = value.fn
        if isinstance(value, pytypes.FunctionType):
            if not runs_in_turn(value, seen, waits):
                return False
        elif isinstance(value, pytypes.ModuleType):
            if value.__name__.split(".")[0] not in _PLAIN_MODULES:
                return False
    return True


def _device_call(self, *args):
    """FakeCUDAKernel.__call__ as install() found it (a launch counter's, say), but a
    device function runs numba_typed."""
    if self._device or kernel._kernel_context:
        with kernel.swapped_cuda_module(self.fn, kernel._get_kernel_context()):
            return numba_typed(self.fn)(*args)
    if getattr(self, "_signatures", None):
        args = declared_launch(self, args)
    stream = getattr(self, "_launch_stream", 0)
    simulator_concurrency.kernel_starts(stream, args)
    try:
        return _KERNEL_CALL(self, *args)
    finally:
        simulator_concurrency.launch_ends()
        simulator_concurrency.kernel_ends(stream, args)


def _configured(self, configuration):
    """FakeCUDAKernel.__getitem__, refusing what a GPU's launch refuses: numba-cuda takes
    a grid and a block of Python ints only (a NumPy integer, from np.minimum or an
    array's shape arithmetic, raises there), so the simulator does too."""
    if isinstance(configuration, tuple):
        for what, dims in zip(("grid", "block"), configuration[:2]):
            given = dims if isinstance(dims, (tuple, list)) else (dims,)
            if not all(isinstance(d, int) for d in given):
                shown = tuple(given) + (1,) * (3 - len(given))
                raise ValueError(
                    f"LaunchConfig.{what} must be an int, or a tuple with up to 3 ints (got "
                    f"{shown!r}): a GPU's launch takes Python ints only, so convert a "
                    "NumPy integer with int(...)")
    # the stream, for kernels.simulator_concurrency's mapped memory
    self._launch_stream = (configuration[2] if isinstance(configuration, tuple)
                           and len(configuration) > 2 else 0)
    return _GETITEM(self, configuration)


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def code_names(code):
    """The global and attribute names a code object (or one nested in it) uses."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= code_names(const)
    return names


# 0x5A and 0xA5 bytes in turn: a large positive, then a large negative integer (a huge,
# then a tiny negative float), so that a read of garbage spoils a sum or a maximum, and
# the next time a minimum
_GARBAGE = itertools.cycle((0x5A, 0xA5))
_ALLOCATING = threading.Lock()


def garbage(shape, dtype):
    """A new array as fresh GPU memory holds it: not zeros (see the module's docstring)."""
    if isinstance(dtype, types.Type):  # a Numba type (int64), as kernels name them
        dtype = numpy_support.as_dtype(dtype)
    ary = np.empty(shape, dtype)
    ary.reshape(-1).view(np.uint8).fill(next(_GARBAGE))
    return ary


def _shared_array(self, shape, dtype, alignment=None):
    """FakeCUDAShared.array: one array per source line and block, born as garbage."""
    if shape == 0 or alignment is not None:  # dynamic memory (garbage from __init__), or refused
        return _SHARED_ARRAY(self, shape, dtype, alignment)
    caller = sys._getframe(1)
    key = caller.f_code.co_filename, caller.f_lineno
    with _ALLOCATING:  # the block's other threads see it once it holds its garbage
        ary = self._allocations.get(key)
        if ary is None:
            ary = self._allocations[key] = garbage(shape, dtype)
    return ary


def _shared_init(self, dynshared_size):
    _SHARED_INIT(self, dynshared_size)
    self._dynshared.view(np.uint8).fill(next(_GARBAGE))


def _local_array(self, shape, dtype, alignment=None):
    if alignment is not None:
        return _LOCAL_ARRAY(self, shape, dtype, alignment)  # which refuses it
    return garbage(shape, dtype)


_SHARED_ARRAY, _SHARED_INIT = kernelapi.FakeCUDAShared.array, kernelapi.FakeCUDAShared.__init__
_LOCAL_ARRAY = kernelapi.FakeCUDALocal.array
_KERNEL_CALL = _GETITEM = None  # FakeCUDAKernel.__call__, __getitem__ before install()


def install():
    """Make the simulator's launches use YieldingBlockManager, run kernels and device
    functions numba_typed, give new shared and local arrays garbage, and install
    kernels.simulator_concurrency (pinned memory, contended locks)."""
    from numba import cuda

    if kernel.BlockManager is YieldingBlockManager:
        return
    kernel.BlockManager = YieldingBlockManager
    kernelapi.FakeCUDAShared.array = _shared_array
    kernelapi.FakeCUDAShared.__init__ = _shared_init
    kernelapi.FakeCUDALocal.array = _local_array
    global _KERNEL_CALL, _GETITEM
    _KERNEL_CALL = kernel.FakeCUDAKernel.__call__
    kernel.FakeCUDAKernel.__call__ = _device_call
    _GETITEM = kernel.FakeCUDAKernel.__getitem__
    kernel.FakeCUDAKernel.__getitem__ = _configured
    simulator_concurrency.install()
    api.jit = cuda.jit = declaring_jit(api.jit)
    for name, value in DEVICE_LIMITS.items():
        setattr(devices.FakeCUDADevice, name, value)


if kernels.SIMULATOR:
    install()
