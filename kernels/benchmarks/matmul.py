"""Benchmarks of the matmul chapter: every version against NumPy and cuBLAS."""

import os

# Before CuPy is imported: cuBLAS then multiplies in full float32, not with TF32
# tensor cores (10-bit mantissas). The accuracy check below catches it if CuPy was
# imported earlier with TF32 on.
os.environ["CUPY_TF32"] = "0"

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

from kernels import harness, matmul as mm, matmul_fast as mf, size  # noqa: E402
from kernels.gridstride import sm_count  # noqa: E402
from kernels.harness import benchmark, row  # noqa: E402

FLOAT32_ERROR = 1e-5  # relative error above this means something ran in lower precision


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _tflops(n, timing):
    return 2 * n**3 / timing.ms / 1e9


@benchmark(*mm.VERSIONS.values(), mm.matmul_naive_kernel, mm.matmul_tiled_kernel,
           mm.matmul_tiled_bounded_kernel, mm.matmul_thread_tile_1d_kernel,
           mm.matmul_thread_tile_2d_kernel, mm.matmul_thread_tile_2d_prefetch_kernel,
           mm.matmul_warp_tile_kernel, mm.tile_row, mm.tile_col, mm.warp_position,
           mm.fetch_tiles, mm.stash_tiles, mm.outer_product, mm.multiply_tiles,
           mm.write_tile, mm._grid, mm._operands, *mf.VERSIONS.values(),
           mf.matmul_unrolled_k_kernel, mf.matmul_unchecked_interior_kernel,
           mf.matmul_split_k_kernel, mf.zero_kernel, mf.multiply_tiles_unrolled,
           mf.fetch_tiles_unchecked, mf.fetch_tiles_until, mf.add_tile, mf.split_k)
def ladder():
    sizes = size("matmul_ladder")
    cupy = _cupy()
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        exact = mm.matmul_float64(a, b)
        rtol, atol = mm.tolerance(a, b)
        cublas_tflops = None
        if cupy is not None:
            ca, cb = cupy.asarray(a), cupy.asarray(b)
            cc = cupy.empty((n, n), dtype=np.float32)
            cupy.matmul(ca, cb, out=cc)
            err = mm.relative_error(cc.get(), exact)
            if err > FLOAT32_ERROR:
                raise RuntimeError(f"cupy.matmul's relative error is {err:.1e}: TF32 is on. "
                                   "Set CUPY_TF32=0 before cupy is imported")
            t = harness.time_gpu(lambda: cupy.matmul(ca, cb, out=cc), repeats=10)
            cublas_tflops = _tflops(n, t)
            rows.append(row("cupy.matmul (cuBLAS)", "peer", t, n=n, tflops=cublas_tflops,
                            rel_error=err, pct_cublas=100.0))
            del ca, cb, cc
        da, db = cuda.to_device(a), cuda.to_device(b)
        dout = cuda.device_array((n, n), dtype=np.float32)
        for name, fn in {**mm.VERSIONS, **mf.VERSIONS}.items():
            if name == "matmul_tiled" and n % mm.TILE:
                continue  # refused: it would read past the edges of a and b
            dout[:] = np.nan
            got = fn(da, db, dout).copy_to_host()
            harness.check(got, exact, name=f"{name} at n={n}", rtol=rtol, atol=atol)
            slow = name == "matmul_naive" and n > 2048
            t = harness.time_gpu(lambda: fn(da, db, dout), repeats=3 if slow else 10,
                                 warmup=1 if slow else 3)
            fields = dict(n=n, tflops=_tflops(n, t), rel_error=mm.relative_error(got, exact))
            if name == "matmul_split_k":
                fields["splits"] = mf.split_k(n, n, n, sm_count())
            if cublas_tflops:
                fields["pct_cublas"] = 100 * fields["tflops"] / cublas_tflops
            rows.append(row(name, "kernel", t, **fields))
        out = np.empty((n, n), dtype=np.float32)
        t = harness.time_cpu(lambda: np.matmul(a, b, out=out), repeats=3)
        fields = dict(n=n, tflops=_tflops(n, t), rel_error=mm.relative_error(out, exact))
        if cublas_tflops:
            fields["pct_cublas"] = 100 * fields["tflops"] / cublas_tflops
        rows.append(row("numpy.matmul (CPU)", "peer", t, **fields))
    return {"description": "c = a @ b, n x n float32 with standard normal entries; "
                           "TFLOP/s = 2 n^3 / time; cuBLAS through cupy.matmul with TF32 "
                           "off; rel_error = max|c - exact| / max|exact| against a float64 "
                           "product; matmul_tiled only where n is a multiple of 16",
            "params": {"sizes": list(sizes), "tile": mm.TILE,
                       "thread_tile_1d": {"block_tile": [mm.T1_BM, mm.T1_BN, mm.T1_BK],
                                          "per_thread": mm.T1_TM},
                       "thread_tile_2d": {"block_tile": [mm.BM, mm.BN, mm.BK],
                                          "per_thread": [mm.TM, mm.TN],
                                          "threads": mm.THREADS_2D},
                       "cupy_tf32": os.environ.get("CUPY_TF32")},
            "rows": rows}
