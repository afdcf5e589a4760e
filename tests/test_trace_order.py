"""kernels.trace.order and kernels.trace.blocks: what orders accesses, and cooperative
launches with every block live."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import cooperative, trace

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")


@cuda.jit
def last_block_kernel(x, partials, ticket, out, fences):
    # Each block writes its partial; the block that draws the last ticket adds them.
    # fences: 1, the writers' fence before the ticket; 2, the reader's after it; 3, both.
    if cuda.threadIdx.x == 0:
        partials[cuda.blockIdx.x] = x[cuda.blockIdx.x]
        if fences & 1:
            cuda.threadfence()
        if cuda.atomic.add(ticket, 0, 1) == cuda.gridDim.x - 1:
            if fences & 2:
                cuda.threadfence()
            total = 0
            for b in range(cuda.gridDim.x):
                total += partials[b]
            out[0] = total


@cuda.jit
def rotate_block_barrier_kernel(m):
    grid = cuda.cg.this_grid()  # cooperative, but the barrier below is the block's
    start = cuda.grid(1)
    for row in range(1, m.shape[0]):
        for col in range(start, m.shape[1], cuda.gridsize(1)):
            m[row, col] = m[row - 1, (col + 1) % m.shape[1]]
        cuda.syncthreads()
    if start < 0:
        grid.sync()


@cuda.jit
def early_return_kernel(x):
    grid = cuda.cg.this_grid()
    if cuda.grid(1) >= x.size:
        return  # these threads never reach grid.sync()
    x[cuda.grid(1)] += 1
    grid.sync()


@cuda.jit
def wide_shared_kernel(x, out):
    tile = cuda.shared.array(32, np.float64)  # 8-byte words: 64 banks' worth per warp
    t = cuda.threadIdx.x
    tile[t] = x[t]
    cuda.syncthreads()
    out[t] = tile[t]


def test_a_fenced_atomic_orders_the_last_blocks_reads_only_with_the_readers_fence(rng):
    """The writers fence before their ticket and the last block's thread fences after
    drawing it (as kernels.scratch.is_last_block): either fence missing is a race, and
    the race names the one missing."""
    x = rng.integers(0, 9, 4).astype(np.int64)
    missing = {3: None, 1: "a fence (cuda.threadfence()) after the atomic, before the read",
               2: "a fence (cuda.threadfence()) before the atomic",
               0: "a fence (cuda.threadfence()) before the atomic, and one after the reader's"}
    for fences, expected in missing.items():
        out, ticket = np.zeros(1, np.int64), np.zeros(1, np.int32)
        t = trace.launch(last_block_kernel, (4, 2), x, np.zeros(4, np.int64), ticket, out,
                         fences)
        assert out[0] == x.sum()
        found = trace.races(t)
        assert bool(found) == (expected is not None), fences
        if found:
            assert {r.array for r in found} == {"partials"}
            assert {r.missing for r in found} == {expected}, fences


def test_grid_sync_is_a_barrier_across_live_blocks(rng):
    m = np.zeros((4, 50), np.int32)
    m[0] = rng.integers(0, 100, 50)
    expected = cooperative.rows_reference(m.copy())
    t = trace.launch(cooperative.rows_grid_sync_kernel, (3, 8), m)
    assert t.launch().cooperative and t.launch().grid == (3, 1, 1)
    np.testing.assert_array_equal(m, expected)
    assert trace.races(t) == []
    assert {a.block[0] for a in t.launch().accesses} == {0, 1, 2}


def test_a_block_barrier_in_a_cooperative_kernel_leaves_cross_block_races(rng):
    m = np.zeros((4, 50), np.int32)
    m[0] = rng.integers(0, 100, 50)
    found = trace.races(trace.launch(rotate_block_barrier_kernel, (3, 8), m))
    assert found and all(r.first.block != r.second.block for r in found)
    assert all("no grid barrier (grid.sync())" in r.why for r in found)


def test_a_grid_barrier_some_threads_skip_is_named():
    with pytest.raises(trace.TraceError, match=r"only 10 of the 16 threads reached grid.sync"):
        trace.launch(early_return_kernel, (2, 8), np.zeros(10, np.int32))


def test_eight_byte_shared_words_are_two_passes_without_a_conflict(rng):
    x = rng.random(32)
    t = trace.launch(wide_shared_kernel, (1, 32), x, np.zeros(32))
    count = trace.bank_conflicts(t, "tile")
    assert count.worst.units == 2 and count.describe().endswith(
        "take 2 passes through the banks per warp access, the fewest their words allow: "
        "no bank conflicts")


def _shared_buffers_with_to_device(a, out, chunks):
    """The chunked add with one set of buffers for every stream, copied in with
    cuda.to_device(..., stream=s): the form the chapter teaches first."""
    from kernels.gridstride import vector_add_gridstride_kernel

    size = -(-a.size // chunks)
    d_out = cuda.device_array(size, a.dtype)
    for lo in range(0, a.size, size):
        s = cuda.stream()
        hi = min(lo + size, a.size)
        d_a = cuda.to_device(a[lo:hi], stream=s)
        vector_add_gridstride_kernel[1, 32, s](d_a, d_a, d_out[:hi - lo])
        d_out[:hi - lo].copy_to_host(out[lo:hi], stream=s)
    cuda.synchronize()
    return out


def _default_stream_event(a, out):
    """Work on stream s after an event recorded on the legacy default stream."""
    from kernels.gridstride import vector_add_gridstride_kernel

    d_a = cuda.device_array_like(a)
    d_a.copy_to_device(a, stream=cuda.default_stream())
    ready = cuda.event()
    ready.record(cuda.default_stream())
    s = cuda.stream()
    ready.wait(s)
    d_out = cuda.device_array_like(a)
    vector_add_gridstride_kernel[1, 32, s](d_a, d_a, d_out)
    d_out.copy_to_host(out, stream=s)
    s.synchronize()
    return out


def test_to_device_on_a_stream_is_a_copy_on_that_stream(rng):
    a = rng.integers(-9, 9, 50).astype(np.int32)
    t = trace.run(_shared_buffers_with_to_device, a, cuda.pinned_array(50, np.int32), 3)
    assert sum(op.what == "copy in" for op in t.operations) >= 3
    found = trace.stream_races(t)
    assert found and all(r.first.stream != r.second.stream for r in found)
    assert "nothing orders the two streams" in found[0].describe()


def test_an_event_on_the_legacy_default_stream_orders_what_waits_for_it(rng):
    a = rng.integers(-9, 9, 50).astype(np.int32)
    t = trace.run(_default_stream_event, a, np.zeros(50, np.int32))
    assert [op.stream for op in t.operations if op.what == "copy in"][-1] == 0
    assert trace.stream_races(t) == []


@cuda.jit
def _fill_kernel(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


@cuda.jit
def _double_kernel(x):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        x[i] = 2 * x[i]


def _fresh_allocation_per_chunk(a, out, chunks):
    """Each chunk in an allocation of its own, on streams in turn; the last chunk's
    array is freed when the next is made (the simulator reuses its memory at once)."""
    streams = [cuda.stream(), cuda.stream()]
    for k, part in enumerate(np.array_split(np.arange(a.size), chunks)):
        s = streams[k % 2]
        d = cuda.to_device(a[part], stream=s)
        _double_kernel[1, 32, s](d)
        d.copy_to_host(out[part], stream=s)
        s.synchronize()
        del d
    return out


def test_an_allocation_keeps_its_identity_until_the_trace_ends(rng):
    """Memory freed while tracing is not handed to the next array: a fresh allocation
    per chunk is not shared memory between streams."""
    a = rng.integers(-9, 9, 60).astype(np.int32)
    t = trace.run(_fresh_allocation_per_chunk, a, np.zeros(60, np.int32), 4)
    assert len({r for r in t.regions}) >= 4
    assert trace.stream_races(t) == []


def _zeroed_on_the_legacy_stream_then_a_new_stream(out):
    d = cuda.device_array_like(out)
    _fill_kernel[1, 32](d, 0)  # on the legacy default stream
    s = cuda.stream()  # made, and first used, after that work
    _fill_kernel[1, 32, s](d, 5)
    d.copy_to_host(out, stream=s)
    s.synchronize()
    return out


def test_a_stream_first_used_after_legacy_stream_work_waits_for_it():
    """A blocking stream waits for the work queued on the legacy default stream before
    its own, whenever the stream was made (rule 3 of the streams chapter)."""
    t = trace.run(_zeroed_on_the_legacy_stream_then_a_new_stream, np.ones(40, np.int32))
    assert [op.stream for op in t.operations][:2] == [0, 1]
    assert trace.stream_races(t) == []


def _added_on_a_stream(a, pinned_out, wait):
    s = cuda.stream()
    d = cuda.to_device(a, stream=s)
    _double_kernel[1, 32, s](d)
    out = cuda.pinned_array(a.shape, a.dtype) if pinned_out else np.empty_like(a)
    d.copy_to_host(out, stream=s)
    if wait:
        s.synchronize()
    return out


def test_the_host_reading_what_a_stream_still_copies_is_a_race(rng):
    """A copy from a stream into pinned memory returns at once: the host must wait for
    the stream before it uses the result. Into pageable memory CUDA copies before it
    returns, and a synchronised stream is waited for."""
    from kernels.trace import diagrams

    a = rng.integers(-9, 9, 40).astype(np.int32)
    found = trace.stream_races(trace.run(_added_on_a_stream, a, True, False))
    assert len(found) == 1 and found[0].second.stream == trace.model.HOST
    assert "synchronize that stream" in found[0].describe()
    picture = diagrams.text(trace.run(_added_on_a_stream, a, True, False), found[0])
    assert "the host" in picture and "[use]" in picture
    for pinned_out, wait in ((True, True), (False, False)):
        assert trace.stream_races(trace.run(_added_on_a_stream, a, pinned_out, wait)) == []


@cuda.jit
def tree_sum_kernel(x, out, branch_barrier):
    s = cuda.shared.array(16, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    half = 8
    while half > 0:
        if t < half:
            s[t] += s[t + half]
            if branch_barrier:  # WRONG on purpose: half of the block skips it
                cuda.syncthreads()
        if not branch_barrier:
            cuda.syncthreads()
        half //= 2
    if t == 0:
        out[0] = s[0]


def test_a_barrier_that_part_of_the_block_skips_is_found():
    """The simulator lets threads waiting at different barriers through together; the
    tracer says which barrier part of the block skipped. Threads that leave before the
    first barrier (a bounds check) are not counted."""
    x = np.arange(16, dtype=np.float64)
    t = trace.launch(tree_sum_kernel, (1, 16), x, np.zeros(1), True)
    found = trace.barriers(t)
    assert found and "never reached the one at tree_sum_kernel, line" in found[0]
    assert trace.barriers(trace.launch(tree_sum_kernel, (1, 16), x, np.zeros(1), False)) == []
    assert trace.barriers(trace.run(cooperative.rows_grid_sync, np.zeros((3, 40), np.int32))) == []


def _auto_synchronized(a, out):
    s = cuda.stream()
    with s.auto_synchronize():  # waits for the stream when the block ends
        d = cuda.to_device(a, stream=s)
        _double_kernel[1, 32, s](d)
        d.copy_to_host(out, stream=s)
    return out


def test_auto_synchronize_waits_for_its_stream_at_the_end(rng):
    a = rng.integers(-9, 9, 40).astype(np.int32)
    assert trace.stream_races(trace.run(_auto_synchronized, a, cuda.pinned_array(40, np.int32))) == []


def test_a_clock_joined_again_into_one_that_holds_it_costs_no_copy():
    from kernels.trace.order import Clock, join

    block = (0, 0, 0)
    a = Clock(0, {block: 1}, {(block, 1): 3, (block, 2): 1})
    b = Clock(1, {}, {(block, 2): 5})
    ab = join(a, b)
    assert (ab.grid, ab.blocks, ab.threads) == (1, {block: 1}, {(block, 1): 3, (block, 2): 5})
    # a waiting thread joins each new release into what it read: the release holds it
    assert join(a, ab) is ab and join(ab, b, a) is ab
    # another clock of the same entries was not joined into it: joined afresh, as large
    c = Clock(0, {}, {(block, 3): 7})
    abc = join(ab, c)
    assert abc is not ab and abc.threads == {**ab.threads, (block, 3): 7}
    # what it holds, it holds weakly: a long wait keeps no chain of old clocks alive
    import gc
    import weakref

    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None and join(ab, c) is not ab
    # a trace's clocks still pickle, with what they hold dropped
    import pickle

    back = pickle.loads(pickle.dumps(abc))
    assert (back.grid, back.blocks, back.threads) == (abc.grid, abc.blocks, abc.threads)
