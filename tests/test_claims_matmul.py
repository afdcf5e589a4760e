"""Claims of matmul.md about recorded measurements, one test per claim, run on every
recording kept and on copies perturbed inside their noise (tests/claims.py).

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite (or to glue from the recording).
"""

import pytest

from claims import med, rec, recording  # noqa: F401 (recording: the autouse fixture)
from kernels import compare


# (the bounds in its prose come from kernels.matmul_bounds for the recording's GPU;
# tests/test_matmul_bounds.py renders them for a T4, an A100 and the H100)


def _ladder():
    return rec("matmul.ladder")


def _mm(name, n=None):
    ladder = _ladder()
    return ladder.get(name, n=n or ladder.entry["params"]["sizes"][-1])


def _mm_gain(before, after, n=None):
    return _mm(after, n)["tflops"] / _mm(before, n)["tflops"]


def _mm_bounds():
    from kernels import matmul_bounds
    ladder = _ladder()
    return matmul_bounds.bounds(ladder.env["device"], n=ladder.entry["params"]["sizes"][0])


def test_matmul_title_the_best_version_is_near_cublas():
    """matmul.md title: "from a naive matmul to near cuBLAS"."""
    ladder = _ladder()
    top = ladder.entry["params"]["sizes"][-1]
    best = max(ladder.rows(kind="kernel", n=top), key=lambda r: r["tflops"])
    assert best["pct_cublas"] >= 80


def test_matmul_naive_is_faster_than_its_requests_from_dram():
    """matmul.md: "Had all its 550 GB of requests gone to device memory at the measured
    copy bandwidth, it would take ... ms: the caches absorb part of the reuse"."""
    ladder = _ladder()
    top = ladder.entry["params"]["sizes"][-1]
    dram_ms = 8 * top**3 / (ladder.limits["copy_gbps"] * 1e9) * 1e3
    assert med(_mm("matmul_naive")) < dram_ms


def test_matmul_tiled_runs_close_under_its_shared_memory_bound():
    """matmul.md: "it takes ... ms [more than device memory would need] ... the kernel
    runs at ...% of [the shared-memory bound], so the wavefronts, not global memory, set
    its pace"; a run above the bound would refute the model."""
    b, ladder = _mm_bounds(), _ladder()
    top = ladder.entry["params"]["sizes"][-1]
    tiled = _mm("matmul_tiled_bounded")
    assert 0.8 <= tiled["tflops"] / b.bound_tflops(b.tiled) < 1
    dram_ms = 8 * top**3 / 16 / (ladder.limits["copy_gbps"] * 1e9) * 1e3
    assert med(tiled) > dram_ms


def test_matmul_thread_tile_1d_stays_under_its_bound():
    """matmul.md: the 1D thread tile "reaches ...% of its higher bound", predicted "up to
    1.8 times faster"."""
    b = _mm_bounds()
    assert _mm("matmul_thread_tile_1d")["tflops"] < b.bound_tflops(b.thread_tile_1d)
    assert _mm_gain("matmul_tiled_bounded", "matmul_thread_tile_1d") <= float(
        b.thread_tile_1d / b.tiled)


def test_matmul_the_2d_thread_tile_is_the_big_step():
    """matmul.md: "The 2D thread tile is the big step, as predicted" ("several times
    faster")."""
    from kernels import matmul as mm, matmul_fast as mf
    names = [*mm.VERSIONS, *mf.VERSIONS]
    names.remove("matmul_tiled")
    gains = {after: _mm_gain(before, after) for before, after in zip(names, names[1:])
             if before != "matmul_naive"}
    assert max(gains, key=gains.get) == "matmul_thread_tile_2d"
    assert gains["matmul_thread_tile_2d"] >= 2


def test_matmul_prefetch_and_warp_layout_add_a_few_per_cent():
    """matmul.md: "Prefetching and the warp layout add a few per cent each, as
    predicted"."""
    assert 1 < _mm_gain("matmul_thread_tile_2d", "matmul_thread_tile_2d_prefetch") < 1.1
    assert 1 < _mm_gain("matmul_thread_tile_2d_prefetch", "matmul_warp_tile") < 1.1


def test_matmul_unrolled_and_unchecked_add_more_than_a_few_per_cent():
    """matmul.md: "Writing out the k-step and dropping the interior checks add more than
    predicted" (a few per cent each) and "*Measured:* ... more than predicted"."""
    for before, after in (("matmul_warp_tile", "matmul_unrolled_k"),
                          ("matmul_unrolled_k", "matmul_unchecked_interior")):
        assert compare.verdict(_mm(after), _mm(before)) == "faster", after


def test_matmul_split_k_changes_nothing_where_it_does_not_split():
    """matmul.md: "At *n* = 2048 and 4096 there are enough tiles, `split_k` returns 1"
    and "At *n* = 4096 it changes nothing (× ...), as expected"."""
    for n in _ladder().entry["params"]["sizes"][1:]:
        assert _mm("matmul_split_k", n)["splits"] == 1
        assert compare.verdict(_mm("matmul_split_k", n),
                               _mm("matmul_unchecked_interior", n)) == "as fast", n


def test_matmul_split_counts_in_the_prose_are_the_recorded_ones():
    """matmul.md: the shares, atomic adds and "split two ways instead of four" come from
    kernels.matmul_bounds for the recording's GPU: they must be what its launches did."""
    b = _mm_bounds()
    assert _mm("matmul_split_k", b.n)["splits"] == b.splits
    assert _mm("matmul_one_block_per_sm", b.n)["splits"] == (
        b.splits_one if b.one_block_fits else b.splits)


def test_matmul_split_k_gains_less_than_predicted_at_the_small_size():
    """matmul.md: split-k "less than predicted" at n = 1000 (the word is glued; the
    reasons after it assume a gain): faster, but under the ideal gain."""
    b = _mm_bounds()
    gain = _mm_gain("matmul_unchecked_interior", "matmul_split_k", b.n)
    assert 1 < gain < 0.95 * b.split_gain


def test_matmul_wide_loads_gain_within_the_prediction():
    """matmul.md: 128-bit loads predicted "up to 13% faster where issuing instructions is
    the limit"."""
    assert 1 < _mm_gain("matmul_split_k", "matmul_wide_loads") <= 1.13


def test_matmul_clamped_edges_gain_that_the_profile_explains():
    """matmul.md: "An exploratory Nsight Compute profile ... at *n* = 4096 ... found a gain
    there, and where it comes from", and clamped edges "faster at *n* = 1000"."""
    assert _mm_gain("matmul_wide_loads", "matmul_clamped_edges") > 1.01
    assert _mm_gain("matmul_wide_loads", "matmul_clamped_edges", _mm_bounds().n) > 1


def test_matmul_one_block_per_sm_pays_at_the_small_size_only():
    """matmul.md: one block per SM "faster at *n* = 1000 only"; "at 2048 and 4096 it is the
    kernel of the step before"."""
    sizes = _ladder().entry["params"]["sizes"]
    assert compare.verdict(_mm("matmul_one_block_per_sm", sizes[0]),
                           _mm("matmul_clamped_edges", sizes[0])) == "faster"
    for n in sizes[1:]:
        assert compare.verdict(_mm("matmul_one_block_per_sm", n),
                               _mm("matmul_clamped_edges", n)) == "as fast", n


def test_matmul_best_small_size_is_narrow_tiles_unsplit():
    """matmul.md: "and at *n* = 1000, with narrow tiles and no split, ...% (in the same
    run as cuBLAS)" (matmul_wide_thread_tiles hands that size to matmul_narrow_tiles, so
    either row may be the faster: the kernel that ran is what counts)."""
    small = _ladder().entry["params"]["sizes"][0]
    best = max(_ladder().rows(kind="kernel", n=small), key=lambda r: r["tflops"])
    assert best["name"] in ("matmul_narrow_tiles", "matmul_wide_thread_tiles")
    assert best["splits"] == 1
    assert "matmul_narrow_tiles_kernel" in " ".join(best["kernels"])


def test_matmul_narrow_tiles_fill_the_sms_where_the_steps_before_split():
    """matmul.md: "At *n* = 1000 the 128 × 128 tiles are 64, for the H100's 132 SMs:
    the steps above split each tile's sum over *k* in two ... 64 × 128 tiles ... make
    128 blocks at *n* = 1000, one per SM, and no split"."""
    from kernels import matmul_narrow as mn
    ladder = _ladder()
    small, sms = ladder.entry["params"]["sizes"][0], ladder.env["device"]["sm_count"]
    assert small == 1000 and ladder.env["device"]["name"].startswith("NVIDIA H100")
    assert sms == 132 and mn.few_tiles(small, small, sms)
    assert (small + 127) // 128 == 8 and (small + mn.NBM - 1) // mn.NBM == 16
    for name in ("matmul_one_block_per_sm", "matmul_flat_offsets",
                 "matmul_pipelined_fragments"):
        assert _mm(name, small)["splits"] == 2, name
    assert _mm("matmul_narrow_tiles", small)["splits"] == 1


def test_matmul_narrow_tiles_pay_at_the_small_size_only():
    """matmul.md: narrow tiles, "*Measured:* × ... at *n* = 1000 ... at 2048 and 4096 it
    is the kernel of the step before" (the rows name the kernels that ran)."""
    sizes = _ladder().entry["params"]["sizes"]
    assert compare.verdict(_mm("matmul_narrow_tiles", sizes[0]),
                           _mm("matmul_pipelined_fragments", sizes[0])) == "faster"
    assert "matmul_narrow_tiles_kernel" in " ".join(_mm("matmul_narrow_tiles",
                                                        sizes[0])["kernels"])
    for n in sizes[1:]:
        narrow, before = _mm("matmul_narrow_tiles", n), _mm("matmul_pipelined_fragments", n)
        assert compare.verdict(narrow, before) == "as fast", n
        assert narrow["kernels"] == before["kernels"], n


def test_matmul_wide_thread_tiles_pay_at_the_large_sizes_only():
    """matmul.md: wider thread tiles, "*Measured:* × ... at *n* = 4096 and × ... at 2048
    ...; at *n* = 1000 it is the kernel of the step before" (the rows name the kernels
    that ran)."""
    sizes = _ladder().entry["params"]["sizes"]
    wide, before = _mm("matmul_wide_thread_tiles", sizes[0]), _mm("matmul_narrow_tiles",
                                                                  sizes[0])
    assert compare.verdict(wide, before) == "as fast"
    assert wide["kernels"] == before["kernels"]
    for n in sizes[1:]:
        wide = _mm("matmul_wide_thread_tiles", n)
        assert compare.verdict(wide, _mm("matmul_narrow_tiles", n)) == "faster", n
        assert "matmul_wide_thread_tiles_kernel" in " ".join(wide["kernels"]), n
        assert wide["splits"] == 1, n


def test_matmul_wide_thread_tiles_are_the_best_at_the_large_sizes():
    """matmul.md, Summary: "... and, last, 8 × 16 results per thread on 128 × 256 tiles
    take it to ...% at *n* = 4096" (the best version, whose share is glued)."""
    ladder = _ladder()
    for n in ladder.entry["params"]["sizes"][1:]:
        best = max(ladder.rows(kind="kernel", n=n), key=lambda r: r["tflops"])
        assert best["name"] == "matmul_wide_thread_tiles", n


def test_matmul_cublas_kernel_at_the_small_size_is_named_for_64_by_128_tiles():
    """matmul.md: "...% of cuBLAS there, whose kernel at this size is named for 64 × 128
    tiles too"."""
    small = _ladder().entry["params"]["sizes"][0]
    for name in ("cupy.matmul (cuBLAS)", "torch.matmul (cuBLAS)"):
        assert all("tilesize64x128x" in k for k in _mm(name, small)["kernels"]), name


def test_matmul_unsplit_versions_have_cublass_error_split_ones_less():
    """matmul.md, Accuracy: "the GPU versions and cuBLAS have the same error against the
    float64 product ... The exception is split-k where it splits" (smaller)."""
    ladder = _ladder()
    for n in ladder.entry["params"]["sizes"]:
        cublas = ladder.get("cupy.matmul (cuBLAS)", n=n)["rel_error"]
        for r in ladder.rows(kind="kernel", n=n):
            if r.get("splits", 1) > 1:
                assert r["rel_error"] < cublas, (r["name"], n)
            elif r["name"] != "matmul_tiled":
                assert r["rel_error"] == pytest.approx(cublas, rel=1e-6), (r["name"], n)


def test_matmul_gpu_error_grows_with_n_and_numpys_does_not():
    """matmul.md: "The GPU versions' error grows with *n* ...; NumPy's does not"."""
    sizes = _ladder().entry["params"]["sizes"]
    gpu = [_mm("matmul_unchecked_interior", n)["rel_error"] for n in sizes]
    cpu = [_mm("numpy.matmul (CPU)", n)["rel_error"] for n in sizes]
    assert gpu == sorted(gpu) and gpu[-1] > 2 * gpu[0]
    assert max(cpu) < 1.5 * cpu[0]


def test_matmul_tiled_has_no_bar_at_1000():
    """matmul.md: "`matmul_tiled` has no bar at *n* = 1000: its host function refuses
    that shape"."""
    small = _ladder().entry["params"]["sizes"][0]
    assert small % 16 and not _ladder().rows(name="matmul_tiled", n=small)


def test_matmul_shares_of_cublas_measured_alike_against_the_faster_call():
    """matmul.md: "The best version ... reaches [glued]% of cuBLAS at *n* = 4096 ...
    These shares compare [device-busy time from the profiler | GPU time from CUDA
    events], against the faster of the two ways to call cuBLAS (`cupy.matmul` and
    `torch.matmul` run the same cuBLAS kernel, in times within a few per cent of each
    other)" (the share computed here from the rows; the same kernel where the rows name
    theirs; "a few per cent": 5%)."""
    import claims
    ladder = _ladder()
    for n in ladder.entry["params"]["sizes"]:
        libs = [r for r in ladder.rows(kind="peer", n=n) if "cuBLAS" in r["name"]]
        if len(libs) < 2:
            continue
        times = [med(r) for r in libs]
        assert max(times) < 1.05 * min(times), n
        if all("kernels" in r for r in libs):
            assert libs[0]["kernels"] == libs[1]["kernels"], n
    top = ladder.entry["params"]["sizes"][-1]
    best = max(ladder.rows(kind="kernel", n=top), key=lambda r: r["tflops"])
    libs = [r for r in ladder.rows(kind="peer", n=top) if "cuBLAS" in r["name"]]
    share = 100 * min(claims.fair_ms(r, best) / claims.fair_ms(best, r) for r in libs)
    glued = claims.render("matmul", "# shares of cuBLAS", ladder=ladder, top=top, best=best,
                          sizes=ladder.entry["params"]["sizes"])
    assert glued["best_pct"] == f"{share:.0f}"
    assert glued["cublas_measure"].startswith(claims.measure_words(best, libs[0]))
