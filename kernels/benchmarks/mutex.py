"""Benchmarks of the mutex chapter: the lock's cost, the dot products, contention."""

import numpy as np
from numba import cuda

from kernels import harness, locks, scratch, size
from kernels import mutex as m
from kernels import reduction_floors as rf
from kernels.benchmarks import optional
from kernels.gridstride import sm_count
from kernels.harness import benchmark, row

LOCKED = (locks.lock, locks.unlock, locks.reset_kernel, locks.DeviceTotal)
DOTS = (m.thread_dot, m.block_sum, m.dot_partial, m.dot_partial_kernel, m.BlockPartials,
        m.dot_mutex, m.dot_mutex_kernel, m.dot_atomic, m.dot_atomic_kernel)
# (blocks, threads) of each version in the comparison, the best of a sweep on an H200
# that is not among the book's recordings (all within 2 us of each other, but for the
# mutex). The H100's mutex.contention recording (256 threads per block) is in line with
# it: the mutex is fastest with few blocks (about one per SM), each block waiting its
# turn for the lock, and slower with every block beyond; dot_atomic stays within 15% of
# its best from 4 to 8 blocks per SM, the 8 launched here (at 32 per SM it is 14% slower
# on the H200 of 2026-11-26; tests/test_claims_mutex.py checks both on every recording
# kept).
def _dot_launch(name, sms):
    return {"dot_mutex": (32, 1024)}.get(name, (8 * sms, 256))


def _dot_inputs():
    n = size("dot")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    return a, b, cuda.to_device(a), cuda.to_device(b)


def _checked(fn, a, b, da, db, **launch):
    """Run fn once against the reference, then return a reusable into= for timing."""
    result = fn(da, db, **launch)
    harness.check(result.value(), m.dot_reference(a, b), name=fn.__name__,
                  rtol=0, atol=m.dot_tolerance(a, b, **launch))
    return result


@benchmark(*LOCKED, m.add_one_mutex, m.add_one_mutex_kernel, m.add_one_atomic,
           m.add_one_atomic_kernel)
def lock_cost():
    sms = sm_count()
    rows = []
    for blocks in (sms, 8 * sms, 64 * sms):
        for fn in (m.add_one_mutex, m.add_one_atomic):
            counter = fn(blocks, 32)
            harness.check(counter.value(), blocks * 32, name=fn.__name__)
            t = harness.time_gpu(lambda: fn(blocks, 32, into=counter), repeats=10)
            rows.append(row(fn.__name__, "kernel", t, blocks=blocks,
                            ns_per_block=t.ms * 1e6 / blocks))
    return {"description": "every thread adds one to a counter: thread 0 of each block "
                           "adds its block's count under the mutex, or with one atomic add "
                           "(32 threads per block)",
            "params": {"threads": 32, "sm_count": sms}, "rows": rows}


@benchmark(*LOCKED, *DOTS, m.dot_last_block, m.dot_last_block_kernel, scratch.buffer,
           scratch.is_last_block, rf.read_only, rf.read_two_kernel)
def dot():
    a, b, da, db = _dot_inputs()
    n, sms = a.size, sm_count()
    moved = 2 * 4 * n
    rows = []
    for name, fn in m.VERSIONS.items():
        blocks, threads = _dot_launch(name, sms)
        launch = {"blocks": blocks, "threads": threads}
        into = _checked(fn, a, b, da, db, **launch)
        t = harness.time_gpu(lambda: fn(da, db, into=into, **launch), cold=True)
        whole = harness.time_cpu(lambda: fn(da, db, into=into, **launch).value(), repeats=20)
        rows.append(row(name, "kernel", t, gbps=moved / t.ms / 1e6,
                        value_ms=whole.ms, **launch))
    # cuBLAS adds in an order of its own: the bound of our default launch is a
    # yardstick for it, not a proof (the GPU tests print its error beside the bound).
    peers = {}
    if (cupy := optional("cupy")) is not None:
        from cupy import cublas

        ca, cb = cupy.asarray(da), cupy.asarray(db)
        peers["cupy.dot"] = lambda: cupy.dot(ca, cb)
        peers["cupy.cublas.dot (cuBLAS sdot)"] = lambda: cublas.dot(ca, cb)
    if (torch := optional("torch")) is not None:
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        peers["torch.dot"] = lambda: torch.dot(ta, tb)
    for name, fn in peers.items():
        harness.check(float(fn()), m.dot_reference(a, b), name=name, rtol=0,
                      atol=m.dot_tolerance(a, b))
        t = harness.time_gpu(fn, cold=True)
        rows.append(row(name, "peer", t, gbps=moved / t.ms / 1e6))
    blocks, threads = _dot_launch("dot_partial", sms)  # the launch of the fast versions
    out = cuda.device_array(1, np.int32)
    t = harness.time_gpu(lambda: rf.read_only(da, db, out=out, blocks=blocks,
                                              threads=threads), cold=True)
    rows.append(row("read_only (read a and b, compute nothing)", "limit", t,
                    gbps=moved / t.ms / 1e6, blocks=blocks, threads=threads))
    t = harness.time_cpu(lambda: np.dot(a, b), repeats=10)
    rows.append(row("numpy.dot (CPU)", "peer", t, gbps=moved / t.ms / 1e6))
    return {"description": f"a . b of {n:,} float32 ({moved / 1e6:.0f} MB read), L2 flushed "
                           "before every repeat (cold); value_ms is a whole call that waits "
                           "for the result on the host",
            "params": {"n": n, "dtype": "float32", "sm_count": sms, "cold": True},
            "rows": rows}


@benchmark(*LOCKED, *DOTS)
def contention():
    a, b, da, db = _dot_inputs()
    n, sms = a.size, sm_count()
    threads = m.THREADS
    sweep = sorted({32, sms, 2 * sms, 4 * sms, 8 * sms, 32 * sms, -(-n // threads)})
    rows = []
    for blocks in sweep:
        for fn in (m.dot_mutex, m.dot_atomic):
            into = _checked(fn, a, b, da, db, blocks=blocks, threads=threads)
            t = harness.time_gpu(lambda: fn(da, db, blocks=blocks, threads=threads, into=into),
                                 cold=True, repeats=5 if blocks > 8 * sms else 20, warmup=1)
            rows.append(row(fn.__name__, "kernel", t, blocks=blocks,
                            us_per_block=t.ms * 1e3 / blocks))
    return {"description": f"a . b of {n:,} float32 with {threads} threads per block, as the "
                           "number of blocks (and so of lock holders) grows; cold",
            "params": {"n": n, "threads": threads, "sm_count": sms, "blocks": sweep},
            "rows": rows}
