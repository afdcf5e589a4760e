import os
import signal
import threading
import time

import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR, simulator_threads

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the simulator's threads")


@cuda.jit
def _reversed_in_blocks(x, out):
    """Each block's values reversed through shared memory: a barrier between."""
    tile = cuda.shared.array(64, np.int64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.size else -1
    cuda.syncthreads()
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.blockDim.x - 1 - t
    if j < x.size:
        out[j] = tile[t]


@cuda.jit
def _fails_in_one_thread(out):
    i = cuda.grid(1)
    cuda.syncthreads()
    if i == 70:
        raise ValueError("thread 70")
    out[i] = i


@cuda.jit
def _exits(out):
    i = cuda.grid(1)
    cuda.syncthreads()
    if i == 3:
        raise SystemExit  # ends this CUDA thread only, as it ends an OS thread
    out[i] = 1


def _reference(x, threads):
    out = np.empty_like(x)
    for start in range(0, x.size, threads):
        tile = np.full(threads, -1, x.dtype)
        part = x[start:start + threads]
        tile[:part.size] = part
        for t in range(threads):
            j = start + threads - 1 - t
            if j < x.size:
                out[j] = tile[t]
    return out


def _launch(n, threads=64):
    x = np.random.default_rng(n).integers(0, 1 << 40, n)
    out = np.full(n, -7, np.int64)  # poisoned
    _reversed_in_blocks[(n + threads - 1) // threads, threads](x, out)
    return out, _reference(x, threads)


def test_a_barrier_kernel_runs_right_on_reused_threads():
    for n in (1, 63, 200, 333):  # sizes that divide no block
        out, expected = _launch(n)
        np.testing.assert_array_equal(out, expected)


@cuda.jit
def _native_ids(out, ids):
    cuda.syncthreads()
    ids.append(threading.get_native_id())  # the OS thread's id, which Linux does not reuse soon
    out[cuda.grid(1)] = 1


def test_threads_are_started_once_and_reused():
    first, second = [], []
    for ids in (first, second):
        out = np.zeros(256, np.int64)
        _native_ids[4, 64](out, ids)
        assert out.all() and len(ids) == 256
    # blocks run one after another: one block's 64 OS threads serve them all, twice
    assert set(second) <= set(first) and len(set(first)) <= 64


def test_inside_a_kernel_the_current_thread_is_the_cuda_thread():
    seen = []

    @cuda.jit
    def where(out):
        cuda.syncthreads()
        me = threading.current_thread()
        seen.append((type(me).__name__, me.is_alive()))
        out[cuda.grid(1)] = me.threadIdx.x + 100 * me.blockIdx.x

    out = np.full(10, -1, np.int64)
    where[2, 5](out)
    np.testing.assert_array_equal(out, np.arange(10) % 5 + 100 * (np.arange(10) // 5))
    assert set(seen) == {("PooledThread", True)}


def test_an_error_in_one_thread_is_said_as_before_and_the_pool_goes_on():
    with pytest.raises(ValueError, match=r"tid=\[6, 0, 0\] ctaid=\[1, 0, 0\]: thread 70"):
        _fails_in_one_thread[3, 64](np.zeros(192, np.int64))
    out, expected = _launch(200)
    np.testing.assert_array_equal(out, expected)


def test_system_exit_in_a_thread_ends_that_cuda_thread_only():
    out = np.zeros(8, np.int64)
    _exits[2, 4](out)
    np.testing.assert_array_equal(out, [1, 1, 1, 0, 1, 1, 1, 1])
    out, expected = _launch(100)
    np.testing.assert_array_equal(out, expected)


def test_a_forked_child_starts_threads_of_its_own():
    _launch(200)  # idle threads in this process, none of which a child has
    assert simulator_threads._IDLE
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if its launch is right
        signal.alarm(30)  # a launch handed to a thread that is not there would hang
        try:
            out, expected = _launch(200)
            os._exit(0 if (out == expected).all() and simulator_threads._IDLE else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_cuda_thread_has_its_os_thread_s_ids_and_a_context_of_its_own():
    seen = []

    @cuda.jit
    def sets_errors(out):
        cuda.syncthreads()
        me = threading.current_thread()
        seen.append((me.ident == threading.get_ident(),
                     me.native_id == threading.get_native_id(), np.geterr()["divide"]))
        np.seterr(divide="raise")  # in this CUDA thread's context only
        out[cuda.grid(1)] = 1

    for _ in range(2):  # the second launch runs on the first one's OS threads
        out = np.zeros(64, np.int64)
        sets_errors[2, 32](out)
        assert out.all()
    assert set(seen) == {(True, True, np.geterr()["divide"])}


@cuda.jit
def _interrupted(out):
    i = cuda.grid(1)
    cuda.syncthreads()
    if i == 5:
        raise KeyboardInterrupt  # not an Exception: the thread's error hook reports it
    out[i] = 1


def test_an_error_hook_that_raises_loses_no_os_thread(monkeypatch):
    def hook(args):
        raise RuntimeError("the hook failed")
    monkeypatch.setattr(threading, "excepthook", hook)
    _interrupted[1, 32](np.zeros(32, np.int64))
    done = []
    after = threading.Thread(target=lambda: done.append(_launch(200)), daemon=True)
    after.start()
    after.join(30)  # a launch handed to an OS thread that ended would never return
    assert done and (done[0][0] == done[0][1]).all()


def test_idle_os_threads_end_and_are_capped(monkeypatch):
    monkeypatch.setattr(simulator_threads, "MAX_IDLE", 8)
    _launch(200)  # 64 OS threads at once, and 8 at most then kept
    assert 0 < len(simulator_threads._IDLE) <= 8
    monkeypatch.setattr(simulator_threads, "IDLE_S", 0.05)
    _launch(200)
    for _ in range(60):  # those kept from before wait out the IDLE_S they began with
        if not simulator_threads._IDLE:
            break
        time.sleep(0.1)
    assert not simulator_threads._IDLE
    out, expected = _launch(200)  # and new ones start
    np.testing.assert_array_equal(out, expected)


def test_debug_mode_s_error_settings_stay_with_its_own_threads():
    def divide(out, x):
        cuda.syncthreads()
        i = cuda.grid(1)
        out[i] = np.float32(1) / x[i]

    zeros = np.zeros(32, np.float32)
    with pytest.raises(FloatingPointError):  # debug mode: divide="raise" in each thread
        cuda.jit(debug=True, opt=False)(divide)[1, 32](np.zeros(32, np.float32), zeros)
    out = np.zeros(32, np.float32)
    with pytest.warns(RuntimeWarning, match="divide by zero"):  # NumPy's default: warn
        cuda.jit(divide)[1, 32](out, zeros)  # the same OS threads, without debug
    assert np.isinf(out).all()


def test_a_barrier_s_gate_keeps_an_event_s_protocol():
    """Set by the block's manager (once, or again by an abort), waited for and cleared by
    its thread: a wait returns only once set, and each set lets one wait through."""
    gate = simulator_threads._Gate()
    passed = []
    waiter = threading.Thread(target=lambda: (gate.wait(), gate.clear(), passed.append(1)))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not passed  # not set: it waits
    gate.set()
    waiter.join(5)
    assert passed == [1]
    gate.set()
    gate.set()  # set twice (an abort after the release): no error, one wait through
    done = threading.Event()
    threading.Thread(target=lambda: (gate.wait(), done.set()), daemon=True).start()
    assert done.wait(5)
    again = threading.Event()
    threading.Thread(target=lambda: (gate.wait(), again.set()), daemon=True).start()
    assert not again.wait(0.2)  # that wait took the set with it
    gate.set()
    assert again.wait(5)
