"""The book's claims about its own recorded measurements, one test per claim.

A sentence that compares or quantifies recorded numbers is either glued from the
recording with its word chosen by ``kernels.compare`` (it then cannot disagree with
the numbers), or states its word in the prose and is protected here: each test's
docstring names the chapter and quotes the sentence, and reads the recording the
book shows (``harness.recorded``, newest across devices). A re-recording that flips
a claim fails its test, so the prose is rewritten before a reader sees it.
"""

import functools

import pytest

from kernels import compare, harness


@functools.lru_cache(maxsize=None)
def rec(key):
    """The recording the book shows for `key` (read once: the tests only read it)."""
    return harness.recorded(key)


def med(row):
    return compare.ms(row)


# ----------------------------------------------------------------- reduction.md


def test_reduction_pcie_is_dozens_of_times_slower_than_hbm():
    """reduction.md: "it must first cross PCIe at some tens of GB/s, dozens of times
    slower, and the copy, not the kernel, sets the time"."""
    limits = rec("reduction.travel").limits
    assert 10 <= limits["h2d_gbps"] < 100
    assert limits["copy_gbps"] / limits["h2d_gbps"] >= 20


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


def test_reduction_loads_matter_more_than_the_tree():
    """reduction.md: "The tree hardly matters; the loads do. Moving from the simple loop
    to four loads in flight (`sum_unrolled`) gains more than replacing the
    shared-memory tree by warp shuffles ... The shuffle version's gain over
    `sum_unrolled` is within the spread of the repeats"."""
    sums = rec("reduction.sum_int32")
    tree, unrolled, shuffle = (med(sums.get(n)) for n in
                               ("sum_shared_tree", "sum_unrolled", "sum_warp_shuffle"))
    assert tree - unrolled > unrolled - shuffle
    assert compare.verdict(sums.get("sum_warp_shuffle"), sums.get("sum_unrolled")) == "as fast"


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


def test_reduction_neither_goal_was_reached():
    """reduction.md: "The goal was 16.5 µs for the sum and 17 µs for min/max ... Neither
    goal was reached"."""
    sums, minmax = rec("reduction.sum_int32"), rec("reduction.minmax_int32")
    assert 1e3 * min(med(r) for r in sums.rows(kind="kernel")) > 16.5
    assert 1e3 * min(med(r) for r in minmax.rows(kind="kernel")) > 17



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


# ------------------------------------------------------------------- atomics.md


def _atomic(k):
    return rec("atomics.contention").get("increment_atomic", counters=k)


def test_atomics_cost_follows_cache_lines_not_only_addresses():
    """atomics.md: "with 32 counters every lane of a warp has a counter of its own, yet an
    increment is about as fast as with 8, because each warp now sends two requests, one
    to each of the two lines ... With 128 counters (8 lines) the same two requests per
    warp spread over four times the lines" (the model predicts 4 times less; more than 2
    is asserted), and contention on one address costs more than spreading over one line."""
    assert compare.verdict(_atomic(32), _atomic(8)) == "as fast"
    assert 2 < compare.ratio(_atomic(128), _atomic(32)) < 5
    assert compare.ratio(_atomic(1024), _atomic(128)) > 2
    assert compare.verdict(_atomic(8), _atomic(1)) == "faster"


def _versions():
    return rec("histogram.versions")


def _inputs(name, label):
    return rec("histogram.inputs").get(name, input=label)


UNIFORM, TEXT, SPACES = "uniform over 128 bins", "Shakespeare", "all spaces"


def test_atomics_global_atomics_agree_within_a_benchmark():
    """atomics.md: "the same kernel, launch and text took from ... to ... µs in different
    benchmarks of the same recording ..., while the repeats within one benchmark agree
    to 1%"."""
    for r in (_versions().get("histogram_global_atomics"),
              _inputs("histogram_global_atomics", TEXT)):
        assert r["time_ms"]["p90"] - r["time_ms"]["p10"] < 0.01 * med(r)


def test_atomics_global_atomics_slower_on_text_than_uniform_and_slowest_on_spaces():
    """atomics.md pitfalls: "The global-atomics version is markedly slower on the text
    than on uniform bytes in every recorded run (above), and a text made only of spaces
    is slower still"."""
    uniform = _inputs("histogram_global_atomics", UNIFORM)
    texts = [_versions().get("histogram_global_atomics"),
             _inputs("histogram_global_atomics", TEXT)]
    for text in texts:
        assert compare.ratio(uniform, text) > 1.5
        assert compare.verdict(_inputs("histogram_global_atomics", SPACES), text) == "slower"


def test_atomics_same_counter_shared_atomics_are_cheap():
    """atomics.md: "`histogram_shared_atomics` ... on nothing but spaces ..., though there
    every lane of a warp hits the same counter: the lanes of a warp that hit *the same*
    counter are combined cheaply"."""
    for name in ("histogram_shared_atomics", "histogram_shared_wide_loads"):
        assert compare.verdict(_inputs(name, SPACES), _inputs(name, UNIFORM)) != "slower"


def test_atomics_counting_costs_the_most_beyond_the_read():
    """atomics.md, version 7: "Of what histogram_bin_tickets does beyond reading the
    text, counting costs the most" (the stage breakdown on the whole text)."""
    stages = rec("histogram.breakdown")
    n = max(r["bytes"] for r in stages.rows())
    t = [med(stages.get(f"up to {st}", bytes=n)) for st in ("read", "clear", "count", "merge")]
    added = {"clear": t[1] - t[0], "count": t[2] - t[1], "merge": t[3] - t[2]}
    assert max(added, key=added.get) == "count", added


def test_atomics_input_matters_far_less_in_shared_memory():
    """atomics.md: "In shared memory the input matters far less" (than for global
    atomics, which slow down severalfold on spaces and markedly on the text): the shared
    version's slowdown on each input is under a third of the global one's."""
    def slowdown(name, label):  # time on `label` over time on uniform bytes
        return compare.ratio(_inputs(name, UNIFORM), _inputs(name, label))
    assert slowdown("histogram_global_atomics", SPACES) > 2
    for label in (TEXT, SPACES):
        assert slowdown("histogram_global_atomics", label) > 1.3
        assert (slowdown("histogram_shared_atomics", label) - 1
                < (slowdown("histogram_global_atomics", label) - 1) / 3)


def test_atomics_lane_private_times_alike_on_every_input_and_does_not_win_on_text():
    """atomics.md: "The lane-private version, as designed, takes the same time on every
    input ..., but it pays for its 32 copies, so the collisions it designs away do not
    make it the faster on the text"; and under Timings: "removing the collisions did not
    buy time on this text"."""
    lane = [_inputs("histogram_lane_private", label) for label in (UNIFORM, TEXT, SPACES)]
    for r in lane[1:]:
        assert compare.verdict(r, lane[0]) == "as fast"
    assert compare.verdict(lane[1], _inputs("histogram_shared_wide_loads", TEXT)) != "faster"
    v = _versions()
    assert compare.verdict(v.get("histogram_lane_private"),
                           v.get("histogram_shared_wide_loads")) != "faster"


def test_atomics_wide_read_is_close_to_its_floor_and_a_call_costs_more_than_the_kernel():
    """atomics.md: "`read_only_wide` ... That last one is close to the physical floor" and
    "At this size the *Python* call costs more than the GPU work"."""
    v = _versions()
    wide = next(r for r in v.rows(kind="limit") if r["name"].startswith("read_only_wide"))
    floor = v.entry["params"]["bytes"] / v.limits["copy_gbps"] / 1e6 + med(
        v.get("clear_kernel alone (one tiny launch)"))
    assert med(wide) < 1.5 * floor
    best = min(v.rows(kind="kernel"), key=med)
    assert best["e2e_ms"]["median"] > 3 * med(best)


def test_atomics_blocks_matter_little_for_global_and_much_for_shared():
    """atomics.md: "For global atomics the number of blocks hardly matters once the GPU
    is full ... For the shared-memory version it matters a lot ... The best point sits
    between the two, at a few blocks per SM"."""
    sweep = rec("histogram.blocks_sweep")
    glob = [med(r) for r in sweep.rows(name="histogram_global_atomics")]
    assert max(glob) / min(glob) < 1.05
    shared = sweep.rows(name="histogram_shared_atomics")
    assert max(map(med, shared)) / min(map(med, shared)) > 1.5
    best = min(shared, key=med)
    assert best["blocks_per_sm"] not in (min(r["blocks_per_sm"] for r in shared),
                                         max(r["blocks_per_sm"] for r in shared))


def test_histogram_default_launches_are_the_sweeps_best():
    """atomics.md: "The host functions launch each version at the best point of the sweep
    made when it was tuned (`default_launch`)"; kernels/histogram.py default_launch
    names the recorded H100 sweep."""
    from kernels import gridstride
    from kernels import histogram as h
    sweep = rec("histogram.blocks_sweep")
    for name in h.VERSIONS:
        blocks, threads = h.default_launch(name)
        default = sweep.get(name, blocks_per_sm=blocks // gridstride.sm_count())
        assert default["threads"] == threads, name
        best = min(sweep.rows(name=name), key=med)
        assert compare.verdict(default, best) == "as fast", (name, best["blocks_per_sm"])


def test_histogram_int64_shared_counters_hurt_most_on_the_skewed_text():
    """atomics.md: "The retries grow with contention, which is why the gap is far larger on
    the skewed text than on uniform bytes"."""
    width = rec("histogram.counter_width")

    def slowdown(label):  # int64 time over int32 time
        return compare.ratio(width.get("int32 counters", input=label),
                             width.get("int64 counters", input=label))
    assert slowdown("Shakespeare") > 2 * slowdown("uniform over 128 bins") > 2



def test_atomics_race_loses_updates_and_the_atomic_none():
    """atomics.md: "with the atomic it was 160 every time"; "the racy kernel ... lost ...% of
    the increments" (most of them: "on a GPU most of them", summary)."""
    race = rec("atomics.race")
    for r in race.rows(name="increment_atomic"):
        assert r["min"] == r["max"] == r["increments"]
    for r in race.rows(name="increment_racy"):
        assert r["lost_fraction"] > 0.5


# ------------------------------------------------------------------- streams.md


def _pipe():
    return rec("streams.pipeline")


def _pipe_row(name, chunks, shrink=1):
    return _pipe().get(name, chunks=chunks, memory="pinned", shrink=shrink)


DRIVER, STAGE, NUMBA = ("vector_add_pipelined_driver_copies",
                        "vector_add_pipelined_stage_streams", "vector_add_pipelined")


def test_streams_rules_in_units_of_one_launch():
    """streams.md: "Two launches on one stream take two units; on two streams, one: they
    ran at the same time. A tiny launch on the legacy default stream between them brings
    back two"."""
    rules = rec("streams.rules")
    for name, units in (("one stream", 2), ("two streams", 1),
                        ("two streams, default stream between", 2)):
        assert abs(rules.get(name)["launches"] - units) < 0.1, name


def test_streams_pageable_copies_block_the_host_and_pinned_ones_do_not():
    """streams.md: "From pinned memory ... the call returns after ... µs, long before the
    copy is done. From pageable memory ... the host waits ... ms, the whole copy"."""
    pinned = rec("streams.pinned")
    for r in pinned.rows(kind="kernel"):
        if r["memory"] == "pageable":
            assert r["issue_ms"] > 0.9 * med(r), r["name"]
        else:
            assert r["issue_ms"] < 0.1 * med(r), r["name"]


def test_streams_two_chunks_hide_about_half_the_copy_out():
    """streams.md: "Two chunks already hide about half of the copy out"."""
    saved = med(_pipe_row(DRIVER, 1)) - med(_pipe_row(DRIVER, 2))
    copy_out = med(_pipe().get("copy out, whole"))
    assert 0.35 < saved / copy_out < 0.65


def test_streams_pageable_pipeline_overlaps_nothing():
    """streams.md: "From pageable memory the same pipeline takes ... ms: nothing overlaps,
    and the copies are slower too"."""
    pageable = _pipe().get(DRIVER, memory="pageable")
    assert med(pageable) > med(_pipe_row(DRIVER, 1))


def test_streams_numba_copies_turn_the_curve_up_at_16_chunks():
    """streams.md: "With Numba's copy methods the curve turns back up: at 16 chunks the
    pipeline takes ... ms, because queueing it takes Python ... ms"."""
    assert compare.verdict(_pipe_row(NUMBA, 16), _pipe_row(NUMBA, 8)) == "slower"
    assert _pipe_row(NUMBA, 16)["issue_ms"] > _pipe_row(DRIVER, 16)["issue_ms"] * 2


def test_streams_driver_queueing_takes_less_than_the_gpu_work():
    """streams.md: "Queueing then takes less time than the GPU's work at every chunk
    count (at most ...% of it, ...), so the GPU never waits for the host" (the share is
    glued); and "Queueing a wait or recording an event costs a few microseconds of host
    time, no more than a driver copy (the table above)"."""
    for name in (DRIVER, STAGE):
        for r in _pipe().rows(name=name, memory="pinned"):
            assert r["issue_ms"] < med(r), (name, r["chunks"], r["shrink"])
    costs = rec("streams.host_costs")
    driver = costs.get("copy_in_driver")["host_us"]
    for name in ("event record", "event wait"):
        assert costs.get(name)["host_us"] <= driver
    assert costs.get("copy_in_numba (copy_to_device)")["host_us"] > 5 * driver


def test_streams_stage_streams_queued_and_unqueued_agree():
    """streams.md: "the queued and the unqueued times of this version agree within
    ...% at every chunk count" (a few percent)."""
    for r in _pipe().rows(name=STAGE, memory="pinned", shrink=1):
        assert abs(r["queued_ms"] / med(r) - 1) < 0.05, r["chunks"]


def test_streams_stage_streams_not_measurably_faster_with_equal_chunks():
    """streams.md: "with 16 equal chunks it is [about as fast as the driver-copies
    version]: the order it imposes is certain, but with equal chunks it is not measurably
    faster on this GPU"."""
    assert compare.verdict(_pipe_row(STAGE, 16), _pipe_row(DRIVER, 16)) == "as fast"


def test_streams_shrink_above_the_bound_and_a_handful_of_chunks_suffice():
    """streams.md: "The pipeline below uses 0.6, which leaves some slack" (above the bound
    on shrink); "slowest at ..., the shrink that leaves the largest last chunk"; "More
    chunks help only up to a handful"; summary: shrinking chunks "bring the pipeline to
    the speed of the copies themselves"."""
    pipe = _pipe()
    params, floor = pipe.entry["params"], pipe.get("floor")
    bound = params["bytes_out"] / params["bytes_in"] * floor["h2d_gbps"] / floor["d2h_gbps"]
    assert params["shrink"] >= bound
    shrunk = [r for r in pipe.rows(name=STAGE, memory="pinned", chunks=params["shrink_at"])
              if r["shrink"] != 1]
    assert max(shrunk, key=med)["shrink"] == max(r["shrink"] for r in shrunk)
    by_chunks = {r["chunks"]: r for r in pipe.rows(name=STAGE, memory="pinned",
                                                  shrink=params["shrink"])}
    assert compare.verdict(by_chunks[max(by_chunks)], by_chunks[params["shrink_at"]]) != "faster"
    fastest = min(pipe.rows(memory="pinned"), key=med)
    assert compare.verdict(fastest, pipe.get("copy in and out at once, whole")) != "slower"



def test_streams_shared_buffers_race_shows_in_some_runs_only():
    """streams.md: "The count changes from run to run, and some runs, even every run of a
    chunk count, come out right"."""
    runs = {r["chunks"]: r["mismatches"] for r in
            _pipe().rows(name="vector_add_pipelined_shared_buffers")}
    assert any(len(set(m)) > 1 for m in runs.values())
    assert any(0 in m for m in runs.values())
    assert any(max(m) > 0 for m in runs.values())



def test_streams_both_directions_overlap_each_a_little_slower():
    """streams.md: "Copying in and out at once, each as one whole copy, takes ... ms: the
    two directions overlap, though each runs a little slower while the other runs"."""
    pipe = _pipe()
    both, into, out = (med(pipe.get(n)) for n in ("copy in and out at once, whole",
                                                  "copy a and b in, whole", "copy out, whole"))
    assert max(into, out) < both < 0.9 * (into + out)



def test_streams_timelines_show_the_tails_and_orders_the_text_describes():
    """streams.md, the timelines: the part that sticks out after the last copy in shrinks
    from one chunk to four to sixteen ("a sixteenth of the copy out"); "the copy engine
    does not take the streams in the order they were queued"; with Numba's copies "the
    copies out ... pile up at the end"; one stream per stage "takes the chunks in order
    ... and almost nothing sticks out after the last copy in"; "each of these runs ends
    no further from the same pipeline's median time above than that pipeline's repeated
    runs spread from their 10th to their 90th percentile"."""
    timeline = rec("streams.timeline")
    copy_out = med(_pipe().get("copy out, whole"))

    def run(name, chunks):
        r = next(r for r in timeline.rows(name=name) if r["chunks"] == chunks)
        ins = sorted((s for s in r["steps"] if s["step"] == "copy in"),
                     key=lambda s: s["done_ms"])
        end = max(s["done_ms"] for s in r["steps"])
        return r, end - ins[-1]["done_ms"], [s["chunk"] for s in ins], end

    tails = [run(DRIVER, k)[1] for k in (1, 4, 16)]
    assert tails == sorted(tails, reverse=True)
    assert tails[2] < 2 * copy_out / 16
    assert run(DRIVER, 16)[2] != sorted(run(DRIVER, 16)[2])
    assert run(NUMBA, 16)[1] > copy_out / 2
    stage, tail, order, _ = run(STAGE, 8)
    assert order == sorted(order) and tail < tails[2]
    for r in timeline.rows():
        end = max(s["done_ms"] for s in r["steps"])
        same = _pipe().get(r["name"], chunks=r["chunks"], memory="pinned", shrink=r["shrink"])
        t = same["time_ms"]
        assert abs(end - t["median"]) <= t["p90"] - t["p10"], (r["name"], r["chunks"])



def test_streams_pipeline_comes_close_to_the_pcie_floor():
    """streams.md summary: "Pipelining copy in, kernel and copy out over chunks on their own
    streams brings a transfer-bound computation close to the floor set by the PCIe
    bandwidth"; the serial version (one chunk) is far from it."""
    pipe = _pipe()
    floor = pipe.get("floor")["floor_ms"]
    fastest = min(pipe.rows(memory="pinned"), key=med)
    assert floor / med(fastest) > 0.85
    assert floor / med(_pipe_row(DRIVER, 1)) < 0.7


# ---------------------------------------------------------------- gridstride.md


def test_gridstride_one_per_element_is_as_fast_as_anything():
    """gridstride.md: "for a plain vector add it is as fast as anything (see the timings
    below)"; "memory, not arithmetic, sets its speed, and both kernels reach the same
    bandwidth"; summary: "both kernels run at most of the device's copy bandwidth"."""
    vec = rec("gridstride.vector_add")
    one = vec.get("vector_add_one_per_element")
    for r in vec.rows():
        assert compare.verdict(one, r) != "slower", r["name"]
    for name in ("vector_add_one_per_element", "vector_add_gridstride"):
        assert vec.get(name)["gbps"] > 0.75 * vec.limits["copy_gbps"]
    assert compare.verdict(vec.get("vector_add_gridstride"), one) == "as fast"


def test_gridstride_bandwidth_levels_off_once_each_sm_is_full():
    """gridstride.md: "With one block per SM ... bandwidth is low. It rises as blocks are
    added, and levels off once each SM is full (8 blocks of 256 threads = 2,048 threads
    per SM); more blocks after that change little"."""
    sweep = rec("gridstride.blocks_sweep")
    rows = sorted(sweep.rows(kind="kernel"), key=lambda r: r["blocks_per_sm"])
    best = min(rows, key=med)
    assert compare.ratio(best, rows[0]) > 2
    times = [med(r) for r in rows if r["blocks_per_sm"] < 8]
    assert times == sorted(times, reverse=True)
    for r in rows:
        if r["blocks_per_sm"] >= 8:
            assert compare.verdict(r, best) == "as fast", r["blocks_per_sm"]


def test_gridstride_2d_loop_is_slower_than_the_flat_one():
    """gridstride.md: "The 2D loop is ... slower than the same addition done on the
    flattened arrays ... For an element-wise operation on contiguous arrays, flatten and
    use the 1D loop"."""
    mat = rec("gridstride.matrix_add_2d")
    assert compare.verdict(mat.get("matrix_add_gridstride_2d"),
                           mat.get("vector_add_gridstride (flattened)")) == "slower"


def test_a_numba_launch_costs_tens_of_microseconds_of_host_time():
    """gridstride.md: "A Numba launch costs tens of µs of host time (the streams chapter
    measures it), longer than many kernels"; reduction.md: "a Numba launch costs tens of
    µs of host time"."""
    launch = rec("streams.host_costs").get("kernel launch")["host_us"]
    assert 10 <= launch < 100
    assert launch > 1e3 * med(rec("reduction.sum_int32").get("sum_last_block"))


# --------------------------------------------------------------------- mutex.md


def _gpu_max_spins():
    """locks.MAX_SPINS as a GPU run sets it (this process may run on the simulator)."""
    import ast
    import inspect
    from kernels import locks
    for node in ast.walk(ast.parse(inspect.getsource(locks))):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MAX_SPINS":
            return eval(compile(ast.Expression(node.value.orelse), "MAX_SPINS", "eval"),
                        {"__builtins__": {}})
    raise AssertionError("locks.MAX_SPINS not found")


def test_mutex_spin_bound_covers_the_longest_recorded_queue():
    """mutex.md: "An honest wait is far shorter: ... on the H100 of the recordings that
    whole queue takes ... ms"; kernels/mutex.py: "On the H100 that whole queue takes about
    a quarter of a second ..., less than 2**22 tries of 0.2 us"."""
    cont = rec("mutex.contention")
    longest = max(med(r) for r in cont.rows(name="dot_mutex"))
    assert longest * 1e-3 < _gpu_max_spins() * 0.2e-6


def test_mutex_lock_cost_grows_with_holders_and_an_atomic_is_cheaper():
    """mutex.md: "With one block per SM a lock costs about ... ns per holder ... With ...
    blocks it costs ... ns per holder, because the waiting threads hammer the same
    address ... An atomic add needs no round trip"."""
    cost = rec("mutex.lock_cost")
    sms = cost.entry["params"]["sm_count"]
    one, many = (cost.get("add_one_mutex", blocks=k * sms)["ns_per_block"] for k in (1, 64))
    assert many > 2 * one
    assert cost.get("add_one_atomic", blocks=64 * sms)["ns_per_block"] < one / 10


def test_mutex_float_atomic_beats_the_lock_and_cupy():
    """mutex.md summary: "For sums, a float atomic per block is faster than a lock and than
    `cupy.dot`"."""
    dot = rec("mutex.dot")
    atomic = dot.get("dot_atomic")
    assert compare.verdict(atomic, dot.get("dot_mutex")) == "faster"
    assert compare.verdict(atomic, dot.get("cupy.dot")) == "faster"


def test_mutex_contention_curves():
    """mutex.md: "`dot_atomic` stays near its best ... up to thousands of blocks"; "(The
    left end of both curves is slow for another reason: 32 blocks of 256 threads are too
    few to keep the memory busy.)"; kernels/benchmarks/mutex.py: the mutex is fastest with
    about one block per SM and slower with every block beyond; dot_atomic is within about
    1 us from 4 to 32 blocks per SM."""
    cont = rec("mutex.contention")
    sms = cont.entry["params"]["sm_count"]
    atomic = {r["blocks"]: r for r in cont.rows(name="dot_atomic")}
    mutex = {r["blocks"]: r for r in cont.rows(name="dot_mutex")}
    best = min(atomic.values(), key=med)
    assert med(atomic[32 * sms]) < 1.1 * med(best)
    assert compare.verdict(atomic[min(atomic)], best) == "slower"
    assert compare.verdict(mutex[min(mutex)], min(mutex.values(), key=med)) == "slower"
    assert min(mutex.values(), key=med)["blocks"] <= sms
    beyond = [med(mutex[b]) for b in sorted(mutex) if b >= sms]
    assert beyond == sorted(beyond)
    span = [med(atomic[k * sms]) for k in (4, 8, 32)]
    assert (max(span) - min(span)) * 1e3 < 1.5


# --------------------------------------------------------------------- intro.md


def test_intro_lists_every_page_of_the_book_in_toc_order():
    """intro.md: the chapter table ("chapter rows: one per chapter, in _toc.yml order")
    names every page of the table of contents, setup and instructors included."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[1]
    toc = re.findall(r"- file: book/(\S+)", (root / "_toc.yml").read_text())
    intro = (root / "book" / "intro.md").read_text()
    rows = re.findall(r"^\| \{doc\}`([^`]+)` \|", intro, flags=re.M)
    assert rows == toc


def test_intro_matmul_row_quotes_the_recorded_share_of_cublas():
    """intro.md: "from a naive matmul to N% of cuBLAS at n = 4096": N is the best version's
    share of cuBLAS at the largest size of the recorded ladder."""
    import pathlib
    import re
    intro = (pathlib.Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text()
    said = re.search(r"(\d+)% of cuBLAS at \*n\* = (\d+)", intro)
    assert said, "the matmul row no longer quotes a share of cuBLAS at a size"
    pct, n = int(said.group(1)), int(said.group(2))
    ladder = rec("matmul.ladder")
    assert n == max(r["n"] for r in ladder.rows(kind="kernel"))
    best = max(r["pct_cublas"] for r in ladder.rows(kind="kernel", n=n))
    assert abs(pct - best) < 1.5, f"intro says {pct}%, the recording {best:.1f}%"


# -------------------------------------------------------------------- matmul.md
# (the bounds in its prose come from kernels.matmul_bounds for the recording's GPU;
# tests/test_matmul_bounds.py renders them for a T4, an A100 and the H100)


@functools.lru_cache(maxsize=None)
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


def test_matmul_best_small_size_is_a_split_version():
    """matmul.md: "and at *n* = 1000, thanks to split-k, ...% (in the same run as
    cuBLAS)"."""
    small = _ladder().entry["params"]["sizes"][0]
    best = max(_ladder().rows(kind="kernel", n=small), key=lambda r: r["tflops"])
    assert best.get("splits", 1) > 1


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


# --------------------------------------------------------------- cooperative.md


def test_cooperative_a_numba_launch_costs_the_host_10_to_30_us():
    """cooperative.md: "Every Numba launch costs the host some 10 to 30 µs of Python and
    driver work, and the cooperative version launches once instead of 32 times"."""
    jac = rec("cooperative.jacobi")
    assert jac.entry["params"]["steps"] == 32
    small = jac.get("jacobi_launch_per_step", n=jac.entry["params"]["sizes"][0])
    assert 10 <= small["us_per_step_e2e"] - small["us_per_step"] <= 30


def test_cooperative_a_grid_barrier_costs_more_than_a_block_barrier():
    """cooperative.md: "Each row costs ... µs with the grid barrier, against ... µs with
    the (wrong) block barrier: that difference is about what one `grid.sync()` costs"."""
    rows = rec("cooperative.rows")
    assert rows.get("rows_grid_sync")["us_per_row"] > rows.get("rows_syncthreads")["us_per_row"]


# --------------------------------------------------------------- performance.md


def test_performance_fma_kernel_reaches_90_percent_of_the_computed_peak():
    """performance.md: the float32 FMA kernel "beside the device's float32 peak"; the
    issue's bar: at least 90% of SMs x lanes x 2 x clock, and never above it."""
    from kernels import hardware
    found = 0
    for data in harness.recordings().values():
        dev = data["device"]
        peak = hardware.fp32_peak_tflops(dev["sm_count"], dev["compute_capability"],
                                         dev["clock_khz"])
        for limits in [data["limits"]] + [e.get("limits", {}) for e in data["benchmarks"].values()]:
            if "fp32_tflops" in limits:
                found += 1
                assert 0.9 <= limits["fp32_tflops"] / peak <= 1, limits["fp32_tflops"]
    assert found


def test_performance_small_reductions_are_a_few_microseconds_over_their_floors():
    """performance.md: "the sum and the min/max of 10⁷ int32 and the dot product of two
    10⁷ float32 vectors a few microseconds over their floors"."""
    from kernels import performance
    lines = {ln.key: ln for ln in performance.summary().lines}
    for key in ("reduction.sum_int32", "reduction.minmax_int32", "mutex.dot"):
        ln = lines[key]
        assert 0 < (med(ln.best) - ln.floor.ms) * 1e3 < 10, key


def test_performance_a_cpu_peer_and_the_gpu_differ_a_hundredfold():
    """performance.md: "The axis is logarithmic because a CPU peer and the GPU differ by a
    factor of a hundred or more"."""
    from kernels import performance
    ratios = [compare.ratio(ln.best, r) for ln in performance.summary().lines
              if ln.metric and ln.best for r in ln.peers if "CPU" in r["name"]]
    assert max(ratios) >= 100


def test_performance_histogram_sweep_l2_helps_little():
    """performance.md: "The input left in L2 helps at most ... times ...: little, since the
    texts that fit in L2 are small enough for the fixed cost per call to be most of their
    time" (the 512 MB sentence that follows is chosen by the recording)."""
    from kernels import sweeps
    sweep = sweeps.load("histogram.size_sweep")
    f = sweeps.facts(sweep)
    assert f["l2_gain"] < 1.25
    best = sweep.series[f["best"]]
    at_l2 = dict(zip(best[1], best[2]))[f["l2_size"]]
    assert f["small_us"] / 1e3 > 0.5 * at_l2


def test_performance_the_sum_reads_near_the_copy_bandwidth():
    """performance.md: "The reading itself runs near the copy bandwidth: at 10⁹ elements
    the sum reaches ...% of it"."""
    from kernels import sweeps
    assert sweeps.facts(sweeps.load("reduction.size_sweep"))["large_of_copy"] >= 0.85
