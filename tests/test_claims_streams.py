"""Claims of streams.md about recorded measurements, one test per claim, run on every
recording kept and on copies perturbed inside their noise (tests/claims.py).

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite (or to glue from the recording).
"""

from claims import med, rec, recording  # noqa: F401 (recording: the autouse fixture)
from kernels import compare


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
    copy is done. From pageable memory ... the host waits ... ms, the whole copy" (the
    host's wait against the fastest tenth of the copy's repeats)."""
    pinned = rec("streams.pinned")
    for r in pinned.rows(kind="kernel"):
        if r["memory"] == "pageable":
            assert r["issue_ms"] > 0.9 * r["time_ms"]["p10"], r["name"]
        else:
            assert r["issue_ms"] < 0.1 * med(r), r["name"]


def test_streams_two_chunks_save_part_of_the_copy_out():
    """streams.md: "Two chunks save [glued]% of a whole copy out's time, and the time falls
    towards the floor as chunks get smaller": a saving, and less than the copy out."""
    saved = med(_pipe_row(DRIVER, 1)) - med(_pipe_row(DRIVER, 2))
    assert 0 < saved < med(_pipe().get("copy out, whole"))


def test_streams_time_falls_towards_the_floor_as_chunks_get_smaller():
    """streams.md: "the time falls towards the floor as chunks get smaller": with the
    driver copies, 4 chunks are faster than 1, and no further halving of the chunks is
    slower beyond the noise (16 against 8 may be a tie)."""
    times = [_pipe_row(DRIVER, k) for k in (1, 2, 4, 8, 16)]
    assert compare.verdict(times[2], times[0]) == "faster"
    for before, after in zip(times, times[1:]):
        assert compare.verdict(after, before) != "slower", after["chunks"]
    assert med(times[-1]) > _pipe().get("floor")["floor_ms"]


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
    [glued]% at every chunk count" (a few percent, or the repeats' own spread)."""
    for r in _pipe().rows(name=STAGE, memory="pinned", shrink=1):
        t = r["time_ms"]
        assert abs(r["queued_ms"] - t["median"]) <= 0.05 * t["median"] + t["p90"] - t["p10"], r[
            "chunks"]


def test_streams_stage_streams_not_measurably_faster_with_equal_chunks():
    """streams.md: "with 16 equal chunks it is [about as fast as the driver-copies
    version]: the order it imposes is certain, but with equal chunks it is not measurably
    faster on this GPU"."""
    assert compare.verdict(_pipe_row(STAGE, 16), _pipe_row(DRIVER, 16)) == "as fast"


def test_streams_a_handful_of_chunks_suffice_and_shrinking_gains_inside_the_noise():
    """streams.md: "More chunks help only up to a handful"; summary: chunks that shrink
    towards the end "shorten the tail, but in this recording by less than the spread of
    the repeats" (at the chunk count the text compares); the fastest pipeline is not slower than the two whole copies at once (the
    mark the text sets)."""
    pipe = _pipe()
    params = pipe.entry["params"]
    by_chunks = {r["chunks"]: r for r in pipe.rows(name=STAGE, memory="pinned",
                                                  shrink=params["shrink"])}
    assert compare.verdict(by_chunks[max(by_chunks)], by_chunks[params["shrink_at"]]) != "faster"
    used = pipe.get(STAGE, chunks=params["shrink_at"], memory="pinned", shrink=params["shrink"])
    equal = pipe.get(STAGE, chunks=params["shrink_at"], memory="pinned", shrink=1)
    assert compare.verdict(used, equal) == "as fast"
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
    does not take the streams in the order they were queued, but it keeps busy"; with Numba's copies "the
    copies out ... pile up at the end"; one stream per stage "takes the chunks in order
    ... and almost nothing sticks out after the last copy in"; and how far each single
    run ends from its median (compare.single_runs: "change the picture little" only
    within 15%; an H100 run of 2026-11-26 ended 69% off at 16 chunks)."""
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
    # "but it keeps busy, with short gaps between copies": the copies in, each as long
    # as its bytes at the whole copy's bandwidth, fill at least 80% of the time from the
    # first one's start to the last one's end
    driver16 = run(DRIVER, 16)[0]
    h2d = _pipe().get("copy a and b in, whole")["gbps"]
    ins = sorted((s for s in driver16["steps"] if s["step"] == "copy in"),
                 key=lambda s: s["done_ms"])
    alone = [8 * (hi - lo) / h2d / 1e6 for lo, hi in
             (driver16["bounds"][s["chunk"]] for s in ins)]
    assert sum(alone) > 0.8 * (ins[-1]["done_ms"] - ins[0]["done_ms"] + alone[0])
    assert run(NUMBA, 16)[1] > copy_out / 2
    stage, tail, order, _ = run(STAGE, 8)
    assert order == sorted(order) and tail < tails[2]
    runs = []
    for r in timeline.rows():
        end = max(s["done_ms"] for s in r["steps"])
        same = _pipe().get(r["name"], chunks=r["chunks"], memory="pinned", shrink=r["shrink"])
        runs.append((r["name"], end, same["time_ms"]["median"]))
    said = compare.single_runs(runs)
    worst = max(abs(end / median - 1) for _, end, median in runs)
    assert ("change the picture little" in said) == (worst <= compare.SINGLE_RUN_CLOSE)
    assert f"{100 * worst:.0f}%" in said


def test_streams_pipeline_comes_close_to_the_pcie_floor():
    """streams.md summary: "Pipelining copy in, kernel and copy out over chunks on their own
    streams brings a transfer-bound computation close to the floor set by the PCIe
    bandwidth"; the serial version (one chunk) is far from it."""
    pipe = _pipe()
    floor = pipe.get("floor")["floor_ms"]
    fastest = min(pipe.rows(memory="pinned"), key=med)
    assert floor / med(fastest) > 0.85
    assert floor / med(_pipe_row(DRIVER, 1)) < 0.7


def test_streams_shrink_sentence_names_a_slowest_shrink_only_beyond_the_noise():
    """streams.md: "from [lo] to [hi] the time varies by [glued]%; [it is slowest at
    ..., the shrink that leaves the largest last chunk | no shrink in that range is
    measurably slower than another]" (generated from the recording it renders)."""
    import claims
    pipe = _pipe()
    glued = claims.render("streams", "shrunk = [r for r in pipe.rows(", pipe=pipe,
                          params=pipe.entry["params"], stage=STAGE, compare=compare)
    said = glued["shrink_slowest"]
    shrunk = [r for r in pipe.rows(name=STAGE, memory="pinned",
                                   chunks=pipe.entry["params"]["shrink_at"]) if r["shrink"] != 1]
    slowest, quickest = max(shrunk, key=med), min(shrunk, key=med)
    named = said.startswith("it is slowest")
    assert named == (compare.verdict(slowest, quickest) == "slower"), said
    assert float(glued["shrink_range_pct"]) >= 0
