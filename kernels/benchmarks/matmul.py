"""Benchmarks of the matmul chapter: every version against NumPy and cuBLAS (ladder),
and the best version against cuBLAS and the float32 peak from n = 256 to 8192 (sweep)."""

import os

# Before CuPy is imported: cuBLAS then multiplies in full float32, not with TF32
# tensor cores (10-bit mantissas). The accuracy check below catches it if CuPy was
# imported earlier with TF32 on.
os.environ["CUPY_TF32"] = "0"

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

from kernels import (device, float4, hardware, harness, matmul as mm,  # noqa: E402
                     matmul_fast as mf, matmul_narrow as mn,
                     matmul_tuned as mt, matmul_wide as mw, size)
from kernels.gridstride import sm_count  # noqa: E402
from kernels.benchmarks import optional  # noqa: E402
from kernels.harness import benchmark, row  # noqa: E402

FLOAT32_ERROR = 1e-5  # relative error above this means something ran in lower precision



def _tflops(n, timing):
    return 2 * n**3 / timing.ms / 1e9


def _torch_matmul(a, b, exact, n, peak=None):
    """torch.matmul (cuBLAS as PyTorch calls it, TF32 off) as a peer row, or None."""
    torch = optional("torch")
    if torch is None:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False  # full float32, as cupy.matmul here
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    tc = torch.empty((n, n), dtype=torch.float32, device="cuda")
    torch.matmul(ta, tb, out=tc)
    err = mm.relative_error(tc.cpu().numpy(), exact)
    if err > FLOAT32_ERROR:
        raise RuntimeError(f"torch.matmul's relative error is {err:.1e}: TF32 is on")
    t = harness.time_gpu(lambda: torch.matmul(ta, tb, out=tc), repeats=10)
    fields = dict(n=n, tflops=_tflops(n, t), rel_error=err)
    if peak:
        fields["pct_peak"] = 100 * fields["tflops"] / peak
    return row("torch.matmul (cuBLAS)", "peer", t, **fields)


# the best version at every size of the ladder: the one the sweep runs
SWEEP_VERSION = "matmul_one_block_per_sm"
FAST_COVERS = (mm.tile_row, mm.tile_col, mm.warp_position, mm.write_tile, mm._grid,
               mm._operands, mm.outer_product, mf.zero_kernel, mf.multiply_tiles_unrolled,
               mf.add_tile, mf.split_k, mf._shares, mf.rows_aligned, mf._launch_wide,
               float4.load_float4_simulated, float4.load_float4_typed, mf.fetch_tiles_wide,
               mf.fetch_tiles_wide_until, mf.stash_tiles_wide, mf.matmul_wide_loads_kernel,
               mf.matmul_clamped_edges_kernel, mf.compiled_for_one_block_per_sm,
               mf.matmul_wide_loads, mf.matmul_clamped_edges, mf.matmul_one_block_per_sm,
               mf.fits_one_block_per_sm, mf.default_splits)


# the steps of kernels.matmul_tuned, after those of matmul and matmul_fast
TUNED_COVERS = (*mt.VERSIONS.values(), mt.offsets, mt.fetch_at, mt.matmul_flat_offsets_kernel,
                mt.load_fragments, mt.multiply_fragments, mt.multiply_loading_next,
                mt.pipelined_step, mt.matmul_pipelined_fragments_kernel, mt._launch,
                mt.default_splits, float4.load_float4_at_simulated,
                float4.load_float4_at_typed)

# the step of kernels.matmul_narrow, after those of matmul_tuned
NARROW_COVERS = (*mn.VERSIONS.values(), mn.narrow_position, mn.narrow_row, mn.narrow_col,
                 mn.narrow_offsets, mn.fetch_narrow_until, mn.fetch_narrow_at, mn.stash_narrow,
                 mn.load_narrow_fragments, mn.narrow_products, mn.narrow_step,
                 mn.put_narrow_tile, mn.matmul_narrow_tiles_kernel, mn.narrow_splits,
                 mn.few_tiles, mn.launch_narrow, mn.default_splits)

# the step of kernels.matmul_wide, after that of matmul_narrow
WIDE_COVERS = (*mw.VERSIONS.values(), mw.wide_offsets, mw.fetch_wide_tiles_until,
               mw.fetch_wide_tiles_at, mw.stash_wide_tiles, mw.load_wide_fragments,
               mw.multiply_wide_fragments, mw.wide_products, mw.wide_step, mw.put_wide_tile,
               mw.matmul_wide_thread_tiles_kernel, mw.launch_wide, mw.default_splits)


@benchmark(*mm.VERSIONS.values(), mm.matmul_naive_kernel, mm.matmul_tiled_kernel,
           mm.matmul_tiled_bounded_kernel, mm.matmul_thread_tile_1d_kernel,
           mm.matmul_thread_tile_2d_kernel, mm.matmul_thread_tile_2d_prefetch_kernel,
           mm.matmul_warp_tile_kernel, mm.fetch_tiles, mm.stash_tiles, mm.multiply_tiles,
           *mf.VERSIONS.values(), mf.matmul_unrolled_k_kernel,
           mf.matmul_unchecked_interior_kernel, mf.matmul_split_k_kernel,
           mf.fetch_tiles_unchecked, mf.fetch_tiles_until, *FAST_COVERS, *TUNED_COVERS,
           *NARROW_COVERS, *WIDE_COVERS)
def ladder():
    sizes = size("matmul_ladder")
    cupy = optional("cupy")
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
        if (torch_row := _torch_matmul(a, b, exact, n)) is not None:
            rows.append(torch_row)
        da, db = cuda.to_device(a), cuda.to_device(b)
        dout = cuda.device_array((n, n), dtype=np.float32)
        for name, fn in {**mm.VERSIONS, **mf.VERSIONS, **mt.VERSIONS, **mn.VERSIONS,
                         **mw.VERSIONS}.items():
            if name == "matmul_tiled" and n % mm.TILE:
                continue  # refused: it would read past the edges of a and b
            dout[:] = np.nan
            got = fn(da, db, dout).copy_to_host()
            harness.check(got, exact, name=f"{name} at n={n}", rtol=rtol, atol=atol)
            slow = name == "matmul_naive" and n > 2048
            t = harness.time_gpu(lambda: fn(da, db, dout), repeats=3 if slow else 10,
                                 warmup=1 if slow else 3)
            fields = dict(n=n, tflops=_tflops(n, t), rel_error=mm.relative_error(got, exact))
            if name in mf.SPLITTING:
                fields["splits"] = mf.default_splits(name, n, n, n, sm_count())
            elif name in mt.VERSIONS:
                fields["splits"] = mt.default_splits(name, n, n, n, sm_count())
            elif name in mn.VERSIONS:
                fields["splits"] = mn.default_splits(name, n, n, n, sm_count())
            elif name in mw.VERSIONS:
                fields["splits"] = mw.default_splits(name, n, n, n, sm_count())
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


@benchmark(*FAST_COVERS)
def sweep():
    """SWEEP_VERSION and cuBLAS from n = 256 to 8192, against the float32 floor."""
    harness.require_gpu("the matmul sweep")
    cupy = optional("cupy")
    dev = device()
    peak = hardware.fp32_peak_tflops(dev["sm_count"], dev["compute_capability"],
                                     dev["clock_khz"])
    fn = mf.VERSIONS[SWEEP_VERSION]
    rng = np.random.default_rng(0)
    rows = []
    for n in size("matmul_sweep"):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        da, db = cuda.to_device(a), cuda.to_device(b)
        # the float64 reference on the GPU where CuPy is (on the CPU, n = 8192 takes long)
        exact = (cupy.matmul(cupy.asarray(a, np.float64), cupy.asarray(b, np.float64)).get()
                 if cupy is not None else mm.matmul_float64(a, b))
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
                            rel_error=err, pct_peak=100 * cublas_tflops / peak))
            del ca, cb, cc
        if (torch_row := _torch_matmul(a, b, exact, n, peak)) is not None:
            rows.append(torch_row)
        dout = cuda.device_array((n, n), dtype=np.float32)
        dout[:] = np.nan
        got = fn(da, db, dout).copy_to_host()
        harness.check(got, exact, name=f"{SWEEP_VERSION} at n={n}", rtol=rtol, atol=atol)
        t = harness.time_gpu(lambda: fn(da, db, dout), repeats=10)
        fields = dict(n=n, tflops=_tflops(n, t), rel_error=mm.relative_error(got, exact),
                      splits=mf.default_splits(SWEEP_VERSION, n, n, n, sm_count()))
        fields["pct_peak"] = 100 * fields["tflops"] / peak
        if cublas_tflops:
            fields["pct_cublas"] = 100 * fields["tflops"] / cublas_tflops
        rows.append(row(SWEEP_VERSION, "kernel", t, **fields))
        rows.append(row("float32 peak", "limit", None, n=n, floor_ms=2 * n**3 / peak / 1e9,
                        tflops=peak))
        del da, db, dout
    return {"description": f"c = a @ b, n x n float32 with standard normal entries, "
                           f"{SWEEP_VERSION} (the best version of the ladder) and cuBLAS "
                           "(cupy.matmul, TF32 off); TFLOP/s = 2 n^3 / time; the floor: "
                           "2 n^3 flops at the float32 peak, SMs x float32 lanes per SM x "
                           "2 x the SMs' peak clock (kernels.hardware)",
            "params": {"sizes": list(size("matmul_sweep")), "version": SWEEP_VERSION,
                       "peak_tflops": peak, "clock_khz": dev["clock_khz"],
                       "cupy_tf32": os.environ.get("CUPY_TF32")},
            "rows": rows}
