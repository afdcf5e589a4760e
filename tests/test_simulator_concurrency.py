"""kernels.simulator_concurrency: what a GPU does at once stays concurrent on the
simulator: a lock others try while it is held, and a copy into pinned memory that is
done only when the host waits for it."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import simulator_concurrency

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="the simulator's behaviour")


@cuda.jit
def _add_under_lock(x, lock, total, retry):
    i = cuda.grid(1)
    if i < x.size:
        done = False
        while not done:
            if cuda.atomic.cas(lock, 0, 0, 1) == 0:
                cuda.threadfence()
                total[0] += x[i]
                cuda.threadfence()
                cuda.atomic.exch(lock, 0, 0)
                done = True
            elif not retry:
                done = True  # tried once, and gave up: its value is lost


@cuda.jit(device=True)
def _block_share(x):
    """The sum of the elements of x that this block's threads index (thread 0 adds them)."""
    part = 0
    for i in range(cuda.blockIdx.x * cuda.blockDim.x,
                   min(x.size, (cuda.blockIdx.x + 1) * cuda.blockDim.x)):
        part += x[i]
    return part


@cuda.jit
def _block_sums_under_exch_lock(x, lock, total, retry):
    """Thread 0 of each block adds its block's share under a test-and-set lock taken
    with exchange and released with exchange."""
    if cuda.threadIdx.x == 0:
        part = _block_share(x)
        done = False
        while not done:
            if cuda.atomic.exch(lock, 0, 1) == 0:
                cuda.threadfence()
                total[0] += part
                cuda.threadfence()
                cuda.atomic.exch(lock, 0, 0)
                done = True
            elif not retry:
                done = True


def _total(kernel, n, retry):
    x = np.ones(n, np.int64)
    lock, total = np.zeros(1, np.int32), np.zeros(1, np.int64)
    kernel[(n + 127) // 128, 128](x, lock, total, retry)
    return int(total[0])


@pytest.mark.parametrize("kernel", [_add_under_lock, _block_sums_under_exch_lock])
def test_a_lock_tried_once_loses_updates_and_one_tried_until_taken_does_not(kernel):
    """Every thread with compare-and-swap, or thread 0 of each block with exchange: on
    a GPU the warp's threads, or the blocks running at once, find the lock taken."""
    assert _total(kernel, 1000, retry=True) == 1000
    assert _total(kernel, 1000, retry=False) < 1000


@cuda.jit
def _double(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = 2 * a[i]


def _copied_out(values, stream):
    """(device result, pinned host array): 2 * values copied out on `stream`."""
    d = cuda.to_device(values, stream=stream)
    out = cuda.device_array_like(d, stream=stream)
    _double[1, 64, stream](d, out)
    host = cuda.pinned_array(values.shape, values.dtype)
    out.copy_to_host(host, stream=stream)
    return out, host


@pytest.mark.parametrize("wait", ["stream", "event", "device", "synchronous copy",
                                  "auto_synchronize"])
def test_a_copy_into_pinned_memory_is_garbage_until_the_host_waits_for_it(rng, wait):
    values = rng.integers(-100, 100, 50).astype(np.int32)
    stream = cuda.stream()
    with stream.auto_synchronize() if wait == "auto_synchronize" else _nothing():
        out, host = _copied_out(values, stream)
        event = cuda.event()
        event.record(stream)
        out[:] = 0  # later device work: the copy took the values before it
        assert not np.array_equal(host, 2 * values)
        assert (host.view(np.uint8) == 0xA5).all()
    if wait == "stream":
        stream.synchronize()
    elif wait == "event":
        event.synchronize()
    elif wait == "device":
        cuda.synchronize()
    elif wait == "synchronous copy":  # the legacy default stream follows every stream
        cuda.to_device(values).copy_to_host()
    np.testing.assert_array_equal(host, 2 * values)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_stream_that_waited_for_an_event_finishes_the_copies_before_it(rng):
    values = rng.integers(-100, 100, 20).astype(np.int64)
    first, second = cuda.stream(), cuda.stream()
    _, host = _copied_out(values, first)
    event = cuda.event()
    event.record(first)
    event.wait(second)
    second.synchronize()
    np.testing.assert_array_equal(host, 2 * values)
    _, other = _copied_out(values, first)
    second.synchronize()  # second never waited for this one
    assert (other.view(np.uint8) == 0xA5).all()
    first.synchronize()
    np.testing.assert_array_equal(other, 2 * values)


def test_copies_into_pageable_memory_or_synchronous_ones_are_done_at_once(rng):
    values = rng.normal(size=30)
    d = cuda.to_device(values)
    stream = cuda.stream()
    np.testing.assert_array_equal(d.copy_to_host(np.empty(30), stream=stream), values)
    np.testing.assert_array_equal(d.copy_to_host(cuda.pinned_array(30)), values)
    assert simulator_concurrency.page_locked(cuda.pinned_array(3))
    plain = np.zeros(3)
    assert not simulator_concurrency.page_locked(plain)
    with cuda.pinned(plain):
        assert simulator_concurrency.page_locked(plain[1:])
    assert not simulator_concurrency.page_locked(plain)


@pytest.mark.parametrize("wait", ["event query", "stream query", "context"])
def test_what_a_gpu_offers_beside_waits_too(rng, wait):
    """cuda.event(timing=False), Event.query(), stream.query() and
    cuda.current_context().synchronize(), which Numba's simulator lacks."""
    values = rng.integers(-100, 100, 40).astype(np.int32)
    stream = cuda.stream()
    _, host = _copied_out(values, stream)
    event = cuda.event(timing=False)
    event.record(stream)
    assert (host.view(np.uint8) == 0xA5).all()
    if wait == "event query":
        while not event.query():
            pass
    elif wait == "stream query":
        assert stream.query()
    else:
        cuda.current_context().synchronize()
    np.testing.assert_array_equal(host, 2 * values)


def test_what_a_kernel_on_a_stream_writes_into_mapped_memory_is_seen_after_the_wait(rng):
    values = rng.integers(-100, 100, 40).astype(np.int32)
    stream = cuda.stream()
    mapped = cuda.mapped_array(values.shape, values.dtype)
    _double[1, 64, stream](cuda.to_device(values, stream=stream), mapped)
    _double[1, 64, stream](cuda.to_device(values, stream=stream), mapped)
    assert (np.asarray(mapped).view(np.uint8) == 0xA5).all()
    doubled = cuda.device_array_like(mapped)
    _double[1, 64, stream](mapped, doubled)  # later on its stream: sees it
    stream.synchronize()
    np.testing.assert_array_equal(np.asarray(mapped), 2 * values)
    np.testing.assert_array_equal(doubled.copy_to_host(), 4 * values)
    _double[1, 64](cuda.to_device(3 * values), mapped)  # on the legacy default stream
    assert (np.asarray(mapped).view(np.uint8) == 0xA5).all()
    cuda.synchronize()
    np.testing.assert_array_equal(np.asarray(mapped), 6 * values)


@cuda.jit(device=True)
def _add_by_cas(x, delta):
    old = x[0]
    while True:
        seen = cuda.atomic.cas(x, 0, old, old + delta)
        if seen == old:
            return
        old = seen


@cuda.jit
def _up_and_down(x, ups):
    """Each thread adds 1, then takes it away, with compare-and-swap loops: the value
    comes back to its start again and again, which is no lock's release."""
    _add_by_cas(x, 1)
    cuda.atomic.add(ups, 0, 1)
    _add_by_cas(x, -1)


def test_compare_and_swap_loops_that_come_back_to_a_value_lose_nothing():
    x, ups = np.zeros(1, np.int32), np.zeros(1, np.int32)
    _up_and_down[3, 64](x, ups)
    assert x[0] == 0 and ups[0] == 3 * 64


@cuda.jit
def _block_sums_checking_first(x, lock, total, check_with_an_atomic):
    """Thread 0 of each block waits until the lock looks free, with plain reads or with
    an atomic add of 0, and only then tries compare-and-swap (test and test-and-set):
    it makes no failing compare-and-swap while it waits."""
    if cuda.threadIdx.x == 0:
        part = _block_share(x)
        done = False
        while not done:
            free = (cuda.atomic.add(lock, 0, 0) if check_with_an_atomic else lock[0]) == 0
            if free and cuda.atomic.cas(lock, 0, 0, 1) == 0:
                cuda.threadfence()
                total[0] += part
                cuda.threadfence()
                cuda.atomic.exch(lock, 0, 0)
                done = True


@pytest.mark.parametrize("check_with_an_atomic", [False, True])
def test_a_late_release_lands_for_threads_that_check_before_they_try(check_with_an_atomic):
    assert _total(_block_sums_checking_first, 1000, check_with_an_atomic) == 1000


@cuda.jit
def _add_under_a_counting_lock(x, lock, total, retry):
    """A lock taken by adding 1 (taken if it was 0) and released by subtracting 1."""
    i = cuda.grid(1)
    if i < x.size:
        done = False
        while not done:
            if cuda.atomic.add(lock, 0, 1) == 0:
                cuda.threadfence()
                total[0] += x[i]
                cuda.threadfence()
                cuda.atomic.sub(lock, 0, 1)
                done = True
            else:
                cuda.atomic.sub(lock, 0, 1)  # not ours: undo the add
                done = not retry


def test_a_lock_taken_by_adding_and_freed_by_subtracting_loses_updates_tried_once():
    # (retried, the same lock can starve: the tries' own adds keep it from 0, on a GPU too)
    assert _total(_add_under_a_counting_lock, 1000, retry=False) < 1000
