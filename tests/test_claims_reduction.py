"""Claims of reduction.md about recorded measurements, one test per claim, run on every
recording kept and on copies perturbed inside their noise (tests/claims.py).

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite (or to glue from the recording).
"""

import dataclasses

from claims import med, rec, recording  # noqa: F401 (recording: the autouse fixture)
from kernels import compare


def test_reduction_pcie_is_many_times_slower_than_device_memory():
    """reduction.md: "it must first cross PCIe: on the [device] below at [glued] GB/s,
    [glued] times slower than a copy on the device ..., and the copy, not the kernel,
    sets the time" (the numbers are glued; the sentence needs the link far slower)."""
    limits = rec("reduction.travel").limits
    assert limits["copy_gbps"] / limits["h2d_gbps"] >= 10


def test_reduction_on_device_call_is_mostly_not_the_kernel():
    """reduction.md: "On the device, the answer is back in ... ms, and most of that is
    not the ... µs kernel but Python"."""
    travel, sums = rec("reduction.travel"), rec("reduction.sum_int32")
    on_device = med(travel.rows(where="on the device already")[0])
    assert med(sums.get("sum_unrolled")) < on_device / 2


def test_reduction_pageable_call_is_almost_all_copy():
    """reduction.md summary: "data that must first cross PCIe spends almost the whole
    call in the copy (...% from pageable memory)"."""
    travel = rec("reduction.travel")
    pageable = med(travel.rows(where="copied from pageable memory")[0])
    on_device = med(travel.rows(where="on the device already")[0])
    assert (pageable - on_device) / pageable >= 0.9


def test_reduction_managed_memory_is_slower_than_a_pinned_copy():
    """reduction.md: "Managed memory is convenient, not fast": the trip takes several
    times as long as a pinned copy of the same bytes."""
    travel = rec("reduction.travel")
    managed = med(travel.rows(where="managed")[0])
    on_device = med(travel.rows(where="on the device already")[0])
    h2d_ms = travel.entry["params"]["bytes"] / travel.limits["h2d_gbps"] / 1e6
    assert managed - on_device > 2 * h2d_ms


def test_reduction_what_the_loads_and_the_tree_changed():
    """reduction.md: "Four loads in flight by hand (`sum_unrolled`) came out [glued], and
    warp shuffles ... came out [glued]. [Neither moved the time much. | Four loads by hand
    moved the time on the [device]; the tree did not move it much. | ...]" (moving it:
    a gain of 15% or more), with "the tree ... could not matter much" only where the
    shuffles did not move it."""
    sums = rec("reduction.sum_int32")
    said = _rendered(sums, rec("reduction.minmax_int32"))["loads_tree_moved"]
    tree, unrolled, shuffle = (sums.get(n) for n in
                               ("sum_shared_tree", "sum_unrolled", "sum_warp_shuffle"))
    loads = med(tree) / med(unrolled) >= 1.15
    shuffles = med(unrolled) / med(shuffle) >= 1.15
    assert said.startswith("Neither moved") == (not loads and not shuffles)
    assert said.startswith("Four loads by hand moved") == (loads and not shuffles)
    assert said.startswith("The shuffles moved") == (shuffles and not loads)
    assert said.startswith("Both moved") == (loads and shuffles)
    assert ("could not matter much" in said) == (not shuffles)


def test_reduction_nothing_reaches_the_copy_bandwidth():
    """reduction.md: "Nothing reaches the copy bandwidth, CuPy included"."""
    for key in ("reduction.sum_int32", "reduction.minmax_int32"):
        result = rec(key)
        for r in result.rows():
            if "gbps" in r and r["l2"].startswith("flushed"):
                assert r["gbps"] < result.limits["copy_gbps"], (key, r["name"])


def test_reduction_one_call_of_a_fast_version_is_several_times_its_kernel():
    """reduction.md: "The end-to-end time of one call of the fast versions is several
    times the kernel's"."""
    sums = rec("reduction.sum_int32")
    for r in sums.rows(kind="kernel"):
        if r["name"] != "sum_global_atomics":
            assert r["e2e_ms"]["median"] > 3 * med(r), r["name"]


def test_reduction_default_blocks_per_sm_is_the_sweeps_best():
    """reduction.md: "blocks per SM ...: the default stays 8" (reduction.BLOCKS_PER_SM),
    and the sweep's figure: more blocks than fit at once add nothing."""
    from kernels import reduction
    sweep = rec("reduction.blocks_sweep")
    for name in ("sum_shared_tree", "sum_unrolled"):
        rows = sweep.rows(name=name)
        best = min(rows, key=med)
        default = sweep.get(name, blocks_per_sm=reduction.BLOCKS_PER_SM)
        assert compare.verdict(default, best) == "as fast", name


def _rendered(sums, minmax):
    import claims
    from kernels import performance
    return claims.render("reduction", "copy = sums.limits", sums=sums, minmax=minmax,
                         compare=compare, performance=performance)


def test_reduction_a_live_run_is_not_called_a_recording():
    """On a T4 read live, the goals sentence and the list of what was tried name this
    run, not "this recording" (they said "this recording is of the Tesla T4" and "on
    the same H100 (... in the recording above)")."""
    sums, minmax = rec("reduction.sum_int32"), rec("reduction.minmax_int32")
    t4 = {**sums.env, "device": {"name": "Tesla T4", "compute_capability": [7, 5]}}
    live = [dataclasses.replace(r, live=True, env=t4) for r in (sums, minmax)]
    said = _rendered(*live)
    assert said["goals_reached"].startswith("Those goals were set on an H100; in this "
                                            "run on the Tesla T4, the fastest sum")
    assert said["sums_where"] == "this run on the Tesla T4"


def test_reduction_goals_said_as_the_recording_shows():
    """reduction.md: "The goal, set on the H100 in CUDA-event times, was 16.5 µs for the
    sum and 17 µs for min/max ... [Neither goal was reached | Both goals were reached |
    The goal for ... was reached, not that for ... | Those goals were set on an H100; in
    [the device recording of date | this run on the device] ...]: the best sum and
    min/max stay [glued] to [glued] µs above the floor" (above it, never below)."""
    sums, minmax = rec("reduction.sum_int32"), rec("reduction.minmax_int32")
    said = _rendered(sums, minmax)["goals_reached"]
    best_sum = 1e3 * min(med(r) for r in sums.rows(kind="kernel"))
    best_mm = 1e3 * min(med(r) for r in minmax.rows(kind="kernel"))
    if "H100" not in sums.env["device"]["name"]:
        assert "reached" not in said and sums.where in said
    elif said == "Neither goal was reached":
        assert best_sum > 16.5 and best_mm > 17
    elif said == "Both goals were reached":
        assert best_sum <= 16.5 and best_mm <= 17
    else:
        assert (best_sum <= 16.5) != (best_mm <= 17)
        assert said.startswith(f"The goal for {'the sum' if best_sum <= 16.5 else 'min/max'}")
    floor_ms = 40e6 / sums.limits["copy_gbps"] / 1e6 + sums.limits["kernel_ms"]
    for result in (sums, minmax):
        assert min(med(r) for r in result.rows(kind="kernel")) > floor_ms


def test_reduction_fused_minmax_gbps_would_say_the_opposite_of_its_time():
    """reduction.md: "Against `cupy.min` followed by `cupy.max`, which read the data twice
    ([glued] µs by [measure], against [glued] µs), ours is [glued] on the same problem
    (their GB/s would say the opposite, as CuPy's count twice the bytes)"."""
    import claims
    minmax = rec("reduction.minmax_int32")
    cupy = minmax.rows(name="cupy.min + cupy.max")
    if not cupy:
        import pytest
        pytest.skip("no CuPy in this recording")
    glued = _rendered(rec("reduction.sum_int32"), minmax)
    best = minmax.get(glued["mm_name"])
    assert "faster" in glued["mm_vs_cupy"]
    assert claims.agrees(glued["mm_vs_cupy"], claims.fair_ms(best, cupy[0]),
                         claims.fair_ms(cupy[0], best))
    assert cupy[0]["gbps"] > best["gbps"]


def test_reduction_against_the_fastest_library_peer_measured_alike():
    """reduction.md: "these comparisons use the [device-busy time from the profiler |
    GPU time from CUDA events]. The fastest sum, [name], takes [µs] and is [phrase] than
    [peer] ([µs]), the fastest library sum ...; end to end ... ours is [phrase]. The fused
    min/max ... is [phrase] than [peer] ..., the fastest library min/max on the same
    problem; end to end, ours is [phrase]" (the peer: the GPU row, whole problem, that
    ours is least ahead of, by the fair measure; the words go the way the medians go)."""
    import claims
    sums, minmax = rec("reduction.sum_int32"), rec("reduction.minmax_int32")
    glued = _rendered(sums, minmax)
    for tag, result in (("sum", sums), ("mm", minmax)):
        best, peer = result.get(glued[f"{tag}_best"]), result.get(glued[f"{tag}_peer"])
        gpu = [r for r in result.rows(kind="peer") if "CPU" not in r["name"] and "part" not in r]
        assert peer in gpu and best["kind"] == "kernel"
        mine = claims.fair_ms(best, peer)
        assert all(claims.fair_ms(peer, best) / mine <= claims.fair_ms(r, best)
                   / claims.fair_ms(best, r) for r in gpu)
        assert glued[f"{tag}_peer_us"] == f"{1e3 * claims.fair_ms(peer, best):.1f}"
        assert claims.agrees(glued[f"{tag}_vs_peer"], mine, claims.fair_ms(peer, best))
        assert claims.agrees(glued[f"{tag}_e2e_vs_peer"], best["e2e_ms"]["median"],
                             peer["e2e_ms"]["median"])


def test_reduction_exhibits_wrong_in_every_run_and_at_zero():
    """reduction.md pitfalls: "A missing `syncthreads` in a shared-memory tree: wrong on the
    GPU in every run (the exhibit above)"; and the zero-start bug "passes a quick test on
    data with both signs, and is wrong otherwise"."""
    ex = rec("reduction.exhibits")
    broken = ex.get("sum_tree_no_syncthreads")
    assert broken["wrong"] == broken["runs"]
    assert ex.get("sum_shared_tree")["wrong"] == 0
    for data, wrong in (("all positive", True), ("all negative", True), ("mixed signs", False)):
        assert ex.get("minmax_zero_init", data=data)["wrong"] is wrong, data
        assert ex.get("minmax_shared_tree", data=data)["wrong"] is False, data
