"""Benchmarks of the grid-stride chapter: vector add, the blocks sweep, 2D add."""

import numpy as np
from numba import cuda

from kernels import gridstride as g
from kernels import harness, size
from kernels.benchmarks import optional
from kernels.harness import benchmark, row

SWEEP_BLOCKS_PER_SM = (1, 2, 4, 8, 16, 32, 64, 128)
THREADS = 256


def _vectors(n):
    rng = np.random.default_rng(0)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    return a, b, cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)


def _library_adds(a, b):
    """{name: timing} of cupy.add and torch.add, for those installed."""
    found = {}
    if (cupy := optional("cupy")) is not None:
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        out = cupy.empty_like(ca)
        harness.check(cupy.add(ca, cb, out=out).get(), a + b, name="cupy.add")
        found["cupy.add"] = harness.time_gpu(lambda: cupy.add(ca, cb, out=out))
    if (torch := optional("torch")) is not None:
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        out = torch.empty_like(ta)
        harness.check(torch.add(ta, tb, out=out).cpu().numpy(), a + b, name="torch.add")
        found["torch.add"] = harness.time_gpu(lambda: torch.add(ta, tb, out=out))
    return found


@benchmark(g.vector_add_one_per_element, g.vector_add_one_per_element_kernel,
           g.vector_add_gridstride, g.vector_add_gridstride_kernel)
def vector_add():
    n = size("vector_add")
    a, b, da, db, dout = _vectors(n)
    moved = 3 * 4 * n  # two reads and one write of float32
    rows = []
    for name, fn in g.VERSIONS.items():
        harness.check(fn(da, db, dout), a + b, name=name)
        t = harness.time_gpu(lambda: fn(da, db, dout))
        rows.append(row(name, "kernel", t, gbps=moved / t.ms / 1e6))
    out = np.empty_like(a)
    t = harness.time_cpu(lambda: np.add(a, b, out=out))
    rows.append(row("numpy.add (CPU)", "peer", t, gbps=moved / t.ms / 1e6))
    for name, t in _library_adds(a, b).items():
        rows.append(row(name, "peer", t, gbps=moved / t.ms / 1e6))
    return {"description": f"out = a + b, {n:,} float32 (240 MB moved: larger than L2, "
                           "so every repeat reads from HBM)",
            "params": {"n": n, "dtype": "float32", "threads": THREADS,
                       "blocks_gridstride": g.default_blocks()},
            "rows": rows}


@benchmark(g.vector_add_gridstride, g.vector_add_gridstride_kernel)
def blocks_sweep():
    n = size("vector_add")
    a, b, da, db, dout = _vectors(n)
    sms = g.sm_count()
    rows = []
    for per_sm in SWEEP_BLOCKS_PER_SM:
        blocks = per_sm * sms
        harness.check(g.vector_add_gridstride(da, db, dout, blocks=blocks), a + b)
        t = harness.time_gpu(lambda: g.vector_add_gridstride(da, db, dout, blocks=blocks))
        rows.append(row("vector_add_gridstride", "kernel", t, blocks=blocks,
                        blocks_per_sm=per_sm, gbps=3 * 4 * n / t.ms / 1e6))
    return {"description": f"vector add of {n:,} float32, {THREADS} threads per block, "
                           f"blocks = k x {sms} SMs",
            "params": {"n": n, "threads": THREADS, "sm_count": sms},
            "rows": rows}


@benchmark(g.matrix_add_gridstride_2d, g.matrix_add_gridstride_2d_kernel,
           g.vector_add_gridstride, g.vector_add_gridstride_kernel)
def matrix_add_2d():
    shape = size("gridstride_2d")
    rng = np.random.default_rng(1)
    a = rng.random(shape, dtype=np.float32)
    b = rng.random(shape, dtype=np.float32)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dout = cuda.device_array(shape, np.float32)
    moved = 3 * a.nbytes
    harness.check(g.matrix_add_gridstride_2d(da, db, dout), a + b)
    t2 = harness.time_gpu(lambda: g.matrix_add_gridstride_2d(da, db, dout))
    flat = (da.reshape(a.size), db.reshape(a.size), dout.reshape(a.size))
    t1 = harness.time_gpu(lambda: g.vector_add_gridstride(*flat))
    return {"description": f"{shape[0]} x {shape[1]} float32 matrix add "
                           f"({moved / 1e6:.0f} MB moved)",
            "params": {"shape": list(shape), "threads_2d": [32, 8]},
            "rows": [row("matrix_add_gridstride_2d", "kernel", t2, gbps=moved / t2.ms / 1e6),
                     row("vector_add_gridstride (flattened)", "kernel", t1,
                         gbps=moved / t1.ms / 1e6)]}
