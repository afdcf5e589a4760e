import contextlib
import threading

import numpy as np
import pytest
from numba import cuda, int32

from kernels import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the simulator's block manager")

if SIMULATOR:
    from numba.cuda.simulator import kernel as sim
    from kernels import simulator, simulator_threads

THREADS = 65  # not a warp multiple


@cuda.jit
def reverse_in_blocks(x):
    # each block reverses its slice through shared memory: wrong without the barrier
    tile = cuda.shared.array(THREADS, int32)
    i = cuda.grid(1)
    tile[cuda.threadIdx.x] = x[i]
    cuda.syncthreads()
    x[i] = tile[THREADS - 1 - cuda.threadIdx.x]


@cuda.jit
def fails_in_one_thread(x):
    if cuda.threadIdx.x == 3:
        x[x.size] = 1  # out of bounds while the others wait at the barrier
    cuda.syncthreads()
    x[cuda.threadIdx.x] = 1


def test_kernels_import_installs_the_yielding_manager():
    assert sim.BlockManager is simulator.YieldingBlockManager


def test_threads_meet_at_each_barrier_of_every_block(rng):
    x = rng.integers(0, 1000, 3 * THREADS).astype(np.int32)
    reverse_in_blocks[3, THREADS](out := x.copy())
    assert (out == x.reshape(3, THREADS)[:, ::-1].ravel()).all()


def test_an_error_in_one_thread_stops_the_block_and_is_raised():
    with pytest.raises(IndexError, match=r"tid=\[3, 0, 0\]"):
        fails_in_one_thread[1, 32](np.zeros(32, np.int32))


def test_the_manager_yields_the_gil_after_each_poll(monkeypatch, rng):
    sleeps = []
    monkeypatch.setattr(simulator.time, "sleep", sleeps.append)
    x = rng.integers(0, 1000, THREADS).astype(np.int32)
    reverse_in_blocks[1, THREADS](x)
    assert sleeps and set(sleeps) == {0}


@cuda.jit
def reads_before_writing(out):
    # slot THREADS - 1 of each array is never written: what a GPU leaves there
    shared = cuda.shared.array(THREADS, int32)
    dynamic = cuda.shared.array(0, int32)
    local = cuda.local.array(2, int32)
    t = cuda.threadIdx.x
    if t < THREADS - 1:
        shared[t] = 0
    cuda.syncthreads()
    if t == 0:
        out[cuda.blockIdx.x, 0] = shared[THREADS - 1]
        out[cuda.blockIdx.x, 1] = dynamic[0]
        out[cuda.blockIdx.x, 2] = local[1]


def test_fresh_shared_and_local_memory_holds_garbage_of_both_signs():
    """As on a GPU, memory no thread wrote is not zero: a large positive or a large
    negative pattern, in turn, so a read before a write spoils a maximum or a minimum."""
    out = np.zeros((4, 3), np.int32)
    for _ in range(2):  # twice: the pattern a launch leaves moves on with the next
        reads_before_writing[4, THREADS, 0, 16](out)
        assert set(np.unique(out)) <= {0x5A5A5A5A, np.int32(-0x5A5A5A5B)}, out
        seen = set(out.ravel())
    assert len(seen) == 2, out  # both signs within a launch of four blocks
    x = np.arange(2 * THREADS, dtype=np.int32)
    reverse_in_blocks[2, THREADS](x)  # a kernel that writes before it reads: unchanged
    assert (x[:THREADS] == np.arange(THREADS)[::-1]).all()


@cuda.jit(device=True)
def _waits_for_the_block():
    cuda.syncthreads()


@cuda.jit
def _calls_a_device_function_that_waits(x):
    _waits_for_the_block()


@cuda.jit
def _spins(flag):
    while flag[0] == 0:  # waits for another thread's write
        pass


@cuda.jit
def _index_2d(out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = 1000 * cuda.threadIdx.x + 100 * cuda.threadIdx.y + cuda.blockIdx.x


def test_threads_that_cannot_wait_for_each_other_run_in_turn(monkeypatch):
    handed = []
    monkeypatch.setattr(simulator_threads.PooledThread, "start",
                        lambda self: handed.append(self))
    assert simulator.runs_in_turn(_index_2d.fn)
    assert not simulator.runs_in_turn(reverse_in_blocks.fn)  # a barrier
    assert not simulator.runs_in_turn(_calls_a_device_function_that_waits.fn)
    assert not simulator.runs_in_turn(_spins.fn)  # a while loop
    out = np.full((7, 9), -1, np.int64)
    started = threading.active_count()
    _index_2d[(2, 3), (4, 3)](out)  # in turn: no OS thread started, and none of the pool's used
    assert threading.active_count() == started and not handed
    i, j = np.indices(out.shape)
    assert (out == 1000 * (i % 4) + 100 * (j % 3) + i // 4).all()
    with pytest.raises(IndexError, match=r"tid=\[2, 0, 0\] ctaid=\[1, 0, 0\]"):
        _index_out_of_bounds[2, 4](np.zeros(6, np.int32))  # thread 6 of 6 elements


@cuda.jit
def _locks_in_a_for_loop(mutex, taken):
    cuda.syncthreads()  # its threads are OS threads, not run in turn
    for _ in range(10):  # a bounded spin: no while loop, but it waits for another thread
        if cuda.atomic.cas(mutex, 0, 0, 1) == 0:
            taken[cuda.threadIdx.x] = 1
            mutex[0] = 0
            break


def test_blocks_that_cannot_spin_switch_threads_coarsely(monkeypatch):
    """A barrier kernel's threads switch every COARSE_SWITCH_S while it runs; a lock's
    (a while loop, or compare-and-swap in a for loop) at the interval as it was, which
    is back after each launch."""
    before = simulator.sys.getswitchinterval()
    seen = []
    run_threads = simulator.YieldingBlockManager._run_threads

    def noted(self, *args):
        seen.append(simulator.sys.getswitchinterval())
        return run_threads(self, *args)
    monkeypatch.setattr(simulator.YieldingBlockManager, "_run_threads", noted)
    reverse_in_blocks[2, THREADS](np.arange(2 * THREADS, dtype=np.int32))
    _locks_in_a_for_loop[1, 4](np.zeros(1, np.int32), np.zeros(4, np.int32))
    flag = np.ones(1, np.int32)
    _spins[1, 2](flag)  # the flag is set: no thread waits
    assert seen == pytest.approx([simulator.COARSE_SWITCH_S] * 2 + [before] * 2)
    assert simulator.sys.getswitchinterval() == before
    with simulator._switching(True):  # a launch that can spin, beside one that cannot
        with simulator._switching(False):
            assert simulator.sys.getswitchinterval() == before
        assert simulator.sys.getswitchinterval() == pytest.approx(simulator.COARSE_SWITCH_S)
    assert simulator.sys.getswitchinterval() == before


@cuda.jit
def _index_out_of_bounds(x):
    x[cuda.grid(1)] = 1  # no bound check


@cuda.jit(device=True)
def _tenth(v):
    return v * 0.1  # float64 in Numba, whatever v's float type


@cuda.jit
def _sums_from_a_float_literal(x, out):
    s = 0.0  # float64 in Numba: the float32 elements are summed in float64
    tenths = 0.0
    for i in range(x.size):
        s += x[i]
        tenths += _tenth(x[i])
    out[0] = s
    out[1] = tenths


def test_float_literals_are_float64_as_in_numba(rng):
    """A float32 value meets a float literal in float64, on the simulator as on a GPU:
    NumPy alone would keep float32 for a Python float."""
    x = rng.uniform(0.1, 1, 1001).astype(np.float32) + np.float32(100)
    in_order, tenths = 0.0, 0.0
    for v in x:
        in_order += float(v)
        tenths += float(v) * 0.1
    for threads in (contextlib.nullcontext(), simulator.every_thread_its_own()):
        out = np.full(2, np.nan)
        with threads:  # in turn, then each CUDA thread an OS thread (each writes the same)
            _sums_from_a_float_literal[2, 3](x, out)
        assert out[0] == in_order
        assert out[1] == tenths



def test_the_device_has_a_gpus_per_block_limits():
    """The chapters read them (the tile exercise: MAX_SHARED_MEMORY_PER_BLOCK), and the
    simulator's device object had only a compute capability."""
    device = cuda.get_current_device()
    assert (device.MAX_THREADS_PER_BLOCK, device.MAX_SHARED_MEMORY_PER_BLOCK,
            device.WARP_SIZE) == (1024, 49152, 32)
    assert not hasattr(device, "MULTIPROCESSOR_COUNT")  # the simulator has no SMs


@cuda.jit
def _log_block_order(log, counter):
    if cuda.threadIdx.x == 0:
        log[cuda.atomic.add(counter, 0, 1)] = cuda.blockIdx.x + 10 * cuda.blockIdx.y


def _block_order(grid):
    log, counter = np.full(grid[0] * grid[1], -1, np.int64), np.zeros(1, np.int64)
    _log_block_order[grid, 2](log, counter)
    return log.tolist()


def test_blocks_run_in_a_shuffled_order_where_asked_each_once():
    """A GPU promises no order of blocks: the grader runs them shuffled (an answer whose
    ties go to block 0 because it always came first fails), each exactly once, in an
    order the seed fixes."""
    every = sorted(x + 10 * y for x in range(4) for y in range(3))
    in_index_order = _block_order((4, 3))
    with simulator.blocks_shuffled(7):
        first, second = _block_order((4, 3)), _block_order((4, 3))
    with simulator.blocks_shuffled(7):
        again = _block_order((4, 3))
    assert sorted(first) == sorted(second) == every
    assert len({tuple(in_index_order), tuple(first), tuple(second)}) == 3
    assert again == first
    assert _block_order((4, 3)) == in_index_order  # outside it, index order again


@pytest.mark.parametrize("configuration", [(np.int64(2), 8), (2, np.int32(8)),
                                           ((2, np.int64(1)), (8, 1))])
def test_a_launch_configured_with_numpy_integers_fails_as_on_a_gpu(configuration):
    """numba-cuda's launch on a GPU takes Python ints only (seen on the lent H100 with
    numba-cuda 0.30.4: a grid from np.minimum raised there and passed here)."""
    x = np.zeros(20, np.int32)
    with pytest.raises(ValueError, match=r"must be an int, or a tuple with up to 3 ints.*"
                                         r"convert a NumPy integer with int"):
        _numpy_config_kernel[configuration](x)
    _numpy_config_kernel[tuple(int(c) if np.isscalar(c) else tuple(map(int, c))
                               for c in configuration)](x)
    assert x.sum() == 16


@cuda.jit
def _numpy_config_kernel(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 1
