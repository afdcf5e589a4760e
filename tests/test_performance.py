"""The performance summary (kernels/performance.py) on made-up recordings."""

import json

import matplotlib.pyplot as plt
import pytest

from kernels import harness, performance, plots

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0], "sm_count": 132,
        "simulator": False, "l2_bytes": 52428800}
LIMITS = {"copy_gbps": 3000.0, "h2d_gbps": 50.0, "d2h_gbps": 48.0, "kernel_ms": 0.004,
          "fp32_tflops": 60.0, "note": "made up"}


def timed(ms, **fields):
    return {"time_ms": {"median": ms, "p10": ms, "p90": ms, "min": ms, "repeats": 5}, **fields}


def kernel(name, ms, **fields):
    return {"name": name, "kind": "kernel", **timed(ms, **fields)}


def peer(name, ms, **fields):
    return {"name": name, "kind": "peer", **timed(ms, **fields)}


BLOCKING = "CUDATimer per call (the call may synchronise)"  # a call that waits inside
ROWS = {
    "add": [kernel("add_plain", 0.2, gbps=1500.0), kernel("add_gridstride", 0.1, gbps=2700.0,
                                                          blocks=1056),
            peer("numpy.add (CPU)", 20.0, gbps=12.0), peer("cupy.add", 0.11, gbps=2500.0)],
    "mm": [kernel("mm_naive", 10.0, tflops=2.0), kernel("mm_tiled", 4.0, tflops=5.0),
           peer("numpy.matmul (CPU)", 500.0, tflops=0.1),
           peer("cupy.matmul (cuBLAS)", 0.5, tflops=40.0)],
    "copy": [kernel("pipelined", 10.0, gbps=45.0, chunks=4),
             {"name": "copy in, whole", "kind": "limit", **timed(9.0, gbps=50.0)},
             {"name": "floor", "kind": "limit", "floor_ms": 8.0}],
    "sizes": [kernel("mm_tiled", 1.0, tflops=6.0, n=4096),
              kernel("mm_tiled", 0.1, tflops=3.0, n=512),
              peer("cupy.matmul (cuBLAS)", 0.4, tflops=45.0, n=4096),
              peer("cupy.matmul (cuBLAS)", 0.01, tflops=60.0, n=512)],
    "transfer": [kernel("host to device, pinned", 2.0, gbps=45.0, direction="host to device",
                        issue_ms=0.05),
                 kernel("host to device, pageable", 5.0, gbps=18.0, direction="host to device")],
    # min and max of 40 MB: the fused kernel reads it once; the peer's two passes read it
    # twice, so at a higher GB/s it still takes longer; a part of the problem is no peer
    "minmax": [kernel("minmax_fused", 0.0215, gbps=40e6 / 0.0215 / 1e6),
               peer("cupy.min + cupy.max", 0.0366, gbps=80e6 / 0.0366 / 1e6),
               peer("cupy.min", 0.0207, gbps=40e6 / 0.0207 / 1e6, part="min only")],
    # the best version's data was on the device; the only peer's was on the host
    "travel": [kernel("sum, data on the device", 0.1, where="device"),
               kernel("sum, data copied from the host", 1.0, where="host"),
               peer("numpy.sum (CPU)", 5.0, where="host")],
    "contention": [kernel("one_counter", 3.0, counters=1), kernel("many", 0.5, counters=64),
                   {"name": "racy", "kind": "kernel", "wrong": 17}],
    # device-busy times: the library call that synchronises inside has events of 0.40 ms
    # but keeps the device busy 0.13 ms; by events the other peer (0.15) would look
    # faster, by busy times it is slower (0.14). End to end, ours is the slower.
    "busy": [kernel("hist", 0.010, gbps=500.0, busy_ms=timed(0.006)["time_ms"],
                    e2e_ms=timed(0.200)["time_ms"]),
             peer("cupy.histogram", 0.40, gbps=14.0, busy_ms=timed(0.13)["time_ms"],
                  e2e_ms=timed(0.40)["time_ms"], timed=BLOCKING),
             peer("torch.histc", 0.15, gbps=30.0, busy_ms=timed(0.14)["time_ms"],
                  e2e_ms=timed(0.16)["time_ms"], timed=BLOCKING),
             peer("numpy.bincount (CPU)", 20.0, gbps=0.3)],
    # a library add faster than ours on the device (a 4-wide vectorised kernel)
    "trails": [kernel("add_gridstride", 0.089, gbps=2700.0, busy_ms=timed(0.089)["time_ms"]),
               peer("torch.add", 0.083, gbps=2900.0, busy_ms=timed(0.080)["time_ms"])],
}


def source_of_fake():
    pass


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def bench_dir(tmp_path, monkeypatch):
    """A recordings folder and fake benchmarks "matmul.<name>" for every ROWS entry."""
    monkeypatch.setattr(harness.recording, "BENCH_DIR", tmp_path)
    harness.load_benchmarks()
    for name in ROWS:
        key = f"matmul.fake_{name}"
        monkeypatch.setitem(harness.recording.BENCHMARKS, key,
                            harness.Benchmark(key, source_of_fake, (source_of_fake,)))
    return tmp_path


def record(bench_dir, names, device=H100, stale=(), date="2026-11-21T13:00:00+00:00"):
    current = harness.source_hash(source_of_fake)
    data = {"schema": 1, "device": device, "numba_cuda": "0.30.4", "numpy": "2.4.0",
            "python": "3.11.7", "driver": "13.0", "limits": LIMITS, "benchmarks": {
                f"matmul.fake_{n}": {"description": f"made-up {n}", "params": {},
                                     "rows": ROWS[n], "date": date,
                                     "source_hash": "0" * 12 if n in stale else current}
                for n in names}}
    (bench_dir / f"{harness.slug(device['name'])}.json").write_text(json.dumps(data))


def lines_by_name(summary):
    return {ln.key.removeprefix("matmul.fake_"): ln for ln in summary.lines}


def test_memory_bound_best_version_against_peer_and_its_floor(bench_dir):
    record(bench_dir, ["add"])
    ln = lines_by_name(performance.summary())["add"]
    assert ln.metric == "gbps" and ln.best["name"] == "add_gridstride"
    assert ln.peer["name"] == "cupy.add"
    assert ln.speedup == pytest.approx(0.11 / 0.1)
    # the bytes add_gridstride counts (2700 GB/s x 0.1 ms = 270 MB) over the measured
    # copy bandwidth, plus the smallest kernel
    assert ln.floor.ms == pytest.approx(270e6 / 3000e9 * 1e3 + 0.004)
    assert ln.over_floor == pytest.approx(0.1 / ln.floor.ms)
    assert "270 MB read or written" in ln.floor.how and "device copy" in ln.floor.how
    assert "add_gridstride (blocks=1056)" in performance.table([ln])


def test_speedup_is_a_ratio_of_times_when_the_peer_moves_twice_the_bytes(bench_dir):
    record(bench_dir, ["minmax"])
    ln = lines_by_name(performance.summary())["minmax"]
    assert ln.peer["name"] == "cupy.min + cupy.max"  # cupy.min alone solves part of it
    assert ln.peer["gbps"] > ln.best["gbps"]  # a GB/s ratio would call the peer faster
    assert ln.speedup == pytest.approx(0.0366 / 0.0215)  # 1.70x: the fused kernel is
    assert "| 1.70x |" in performance.table([ln])
    assert ln.floor.ms == pytest.approx(40e6 / 3000e9 * 1e3 + 0.004)  # 40 MB, not 80


def test_tflops_floor_is_the_measured_fp32_rate(bench_dir):
    record(bench_dir, ["mm"])
    ln = lines_by_name(performance.summary())["mm"]
    assert ln.metric == "tflops" and ln.best["name"] == "mm_tiled"
    assert ln.peer["name"] == "cupy.matmul (cuBLAS)" and ln.speedup == pytest.approx(0.5 / 4)
    flops = 5.0 * 4.0 * 1e9  # 5 TFLOP/s for 4 ms
    assert ln.floor.ms == pytest.approx(flops / 60e12 * 1e3 + 0.004)
    assert "measured float32 FMA rate" in ln.floor.how


def test_with_the_clock_known_the_tflops_floor_is_the_devices_peak_never_a_peer(
        bench_dir, monkeypatch):
    monkeypatch.setitem(LIMITS, "fp32_tflops", 30.0)  # below cuBLAS's 40: not a limit
    record(bench_dir, ["mm"], device={**H100, "clock_khz": 1_980_000})
    ln = lines_by_name(performance.summary())["mm"]
    peak = 132 * 128 * 2 * 1.98e9  # SMs x lanes x 2 x clock
    assert ln.floor.ms == pytest.approx(5.0 * 4.0 * 1e9 / peak * 1e3 + 0.004)
    assert "cuBLAS" not in ln.floor.how and "132 SMs \u00d7 128 lanes" in ln.floor.how


def test_a_row_that_names_its_dram_bytes_is_floored_by_them(bench_dir, monkeypatch):
    # 32 sweeps of a problem that stays in L2: its GB/s counts 32x what crosses DRAM
    monkeypatch.setitem(ROWS, "add", [kernel("sweeps", 0.5, gbps=3200.0, dram_bytes=50e6)])
    record(bench_dir, ["add"])
    ln = lines_by_name(performance.summary())["add"]
    assert ln.floor.ms == pytest.approx(50e6 / 3000e9 * 1e3 + 0.004)
    assert "50 MB that must cross DRAM" in ln.floor.how


def test_each_entry_is_floored_by_the_limits_of_its_own_run(bench_dir):
    record(bench_dir, ["add"])
    path = next(bench_dir.glob("*.json"))
    data = json.loads(path.read_text())
    data["benchmarks"]["matmul.fake_add"]["limits"] = {**LIMITS, "copy_gbps": 2000.0}
    path.write_text(json.dumps(data))
    ln = lines_by_name(performance.summary())["add"]
    assert ln.floor.ms == pytest.approx(270e6 / 2000e9 * 1e3 + 0.004)


def test_a_floor_row_of_the_benchmark_wins(bench_dir):
    record(bench_dir, ["copy"])
    ln = lines_by_name(performance.summary())["copy"]
    assert ln.floor.ms == 8.0 and "floor" in ln.floor.how and ln.peer is None
    assert ln.speedup is None and "| 1.25x |" in performance.table([ln])


def test_peers_and_floor_are_taken_at_the_best_versions_problem(bench_dir):
    record(bench_dir, ["sizes"])
    ln = lines_by_name(performance.summary())["sizes"]
    assert ln.best["n"] == 4096 and [r["n"] for r in ln.peers] == [4096]
    assert ln.peer["tflops"] == 45.0 and ln.speedup == pytest.approx(0.4 / 1.0)
    assert ln.floor.ms == pytest.approx(6e12 * 1e-3 / 60e12 * 1e3 + 0.004)


def test_a_peer_that_ran_another_problem_is_no_peer(bench_dir):
    """A CPU sum of data on the host is not the same problem as a GPU sum of data
    already on the device: no speed-up is computed from it (reduction.travel)."""
    record(bench_dir, ["travel"])
    ln = lines_by_name(performance.summary())["travel"]
    assert ln.best["where"] == "device"
    assert ln.peers == [] and ln.peer is None and ln.speedup is None


def test_a_transfer_is_bounded_by_the_host_link(bench_dir):
    record(bench_dir, ["transfer"])
    ln = lines_by_name(performance.summary())["transfer"]
    assert "host to device" in ln.floor.how and "no kernel launch" in ln.floor.how
    assert ln.floor.ms == pytest.approx(90e6 / 50e9 * 1e3)  # a copy launches no kernel
    assert performance.label(ln.best) == "host to device, pinned"  # no measured floats


def test_a_recording_without_the_smallest_kernel_has_no_floor(bench_dir, monkeypatch):
    monkeypatch.delitem(LIMITS, "kernel_ms")
    record(bench_dir, ["add"])
    ln = lines_by_name(performance.summary())["add"]
    assert ln.floor is None and ln.over_floor is None
    assert "no floor" in performance.floors([ln])


def test_times_only_benchmark_is_a_behaviour_not_a_throughput(bench_dir):
    record(bench_dir, ["contention", "add"])
    summary = performance.summary()
    ln = lines_by_name(summary)["contention"]
    assert ln.metric is None and ln.best["name"] == "many" and ln.floor is None
    assert "fake_contention" not in performance.table(summary.lines)
    assert "made-up contention" in performance.behaviours(summary.lines)
    assert len(performance.figures(summary.lines)) == 1  # the throughput one only


def test_stale_recording_is_flagged_in_table_and_figure(bench_dir):
    record(bench_dir, ["add", "mm"], stale=("mm",))
    summary = performance.summary()
    assert lines_by_name(summary)["mm"].result.stale
    table = performance.table(summary.lines)
    assert "`matmul.fake_mm` **STALE**" in table and "`matmul.fake_add` **STALE**" not in table
    (fig,) = performance.figures(summary.lines)
    assert "STALE (kernels changed since recorded): matmul.fake_mm" in fig.get_suptitle()
    ticks = {t.get_text(): t.get_color() for t in fig.axes[0].get_yticklabels()}
    assert ticks["matmul.fake_mm (STALE)"] == "tab:red"


def test_every_figure_names_device_driver_numba_cuda_and_date(bench_dir):
    record(bench_dir, ["add"])
    record(bench_dir, ["mm"], device={**H100, "name": "Tesla T4"},
           date="2026-11-22T09:00:00+00:00")
    figs = performance.figures(performance.summary().lines)
    assert len(figs) == 2
    captions = sorted(f.get_suptitle().split("\n", 1)[1] for f in figs)
    assert captions == [
        "NVIDIA H100 80GB HBM3, driver 13.0, numba-cuda 0.30.4, recorded 2026-11-21",
        "Tesla T4, driver 13.0, numba-cuda 0.30.4, recorded 2026-11-22"]


def test_nothing_recorded_is_said_not_crashed(bench_dir):
    summary = performance.summary()
    assert summary.lines == [] and "matmul.fake_add" in summary.unrecorded
    assert performance.table([]) == "*No throughput benchmark recorded yet.*"
    assert performance.behaviours([]) == "*None recorded yet.*"
    assert performance.figures([]) == []


def test_topics_without_benchmarks_are_listed(bench_dir, monkeypatch):
    monkeypatch.setattr(harness.recording, "TOPICS", harness.recording.TOPICS + ("tensorcores",))
    assert "tensorcores" in performance.summary().no_benchmarks


def test_an_experiment_on_one_version_is_not_summarised():
    """A benchmark registered summarised=False (where version 1's output sits, version
    7 with one row of counters) is no race of versions: the summary leaves it out."""
    experiments = {k for k, b in harness.load_benchmarks().items() if not b.summarised}
    assert {"histogram.placement", "histogram.private_rows"} <= experiments
    summary = performance.summary()
    keys = {ln.result.key for ln in summary.lines} | set(summary.unrecorded)
    assert keys and not keys & experiments and "histogram.versions" in keys


def test_no_recorded_run_beats_its_floor():
    """Every timed version and whole-problem peer of every recording (the real ones in
    book/_data/bench), at every size it was run, takes at least the floor of its own
    problem: a floor that a run beats is not a physical limit (re-measure the limits,
    or count the bytes right). The one exception is physical too: a run timed with its
    input left in L2 ("warm") may beat the DRAM floor where its bytes fit in L2."""
    beaten, checked = [], 0
    for ln in performance.summary().lines:
        l2_bytes = ln.result.env["device"].get("l2_bytes", 0)
        for r in ln.result.entry["rows"]:
            if (r["kind"] not in ("kernel", "peer") or "time_ms" not in r
                    or performance.PART in r):
                continue
            floor = performance._floor(ln.result, r)
            if floor is None:
                continue
            checked += 1
            nbytes = r.get("gbps", 0) * performance.ms(r) * 1e6
            in_l2 = r.get("l2") == "warm" and "tflops" not in r and nbytes <= l2_bytes
            if performance.ms(r) < floor.ms and not in_l2:
                beaten.append(f"{ln.key}: {performance.label(r)} {performance.ms(r):.4g} ms "
                              f"< floor {floor.ms:.4g} ms")
    assert checked > 100  # every size of every benchmark, not only the best rows
    assert not beaten, "\n".join(beaten)


def test_figure_names_every_row_on_its_own_line_for_the_column(bench_dir):
    record(bench_dir, ["add", "mm"])
    summary = performance.summary()
    (fig,) = performance.figures(summary.lines)
    assert fig.get_figwidth() == plots.WIDTH_IN
    assert plots.smallest_text_pt(fig) >= plots.MIN_PT
    ax = fig.axes[0]
    words = [t.get_text() for t in ax.texts]
    for ln in summary.lines:
        said = [w for w in words if w.startswith(f"best: {ln.best['name']}")]
        assert said, f"{ln.key}: its best version is not named"
        if ln.peer is not None:
            assert f"fastest peer: {ln.peer['name']} takes {ln.speedup:,.1f}x as long" in said[0]
    # no name sits on a marker: each line is between two rows of markers
    rows = {round(y) for line in ax.lines for y in line.get_ydata()}
    assert all(abs(t.get_position()[1] - round(t.get_position()[1])) > 0.3 for t in ax.texts)
    assert rows == set(range(len(summary.lines)))
    assert "CPU peers and host transfers" in ax.get_xlabel()


def test_no_recorded_floor_is_a_rows_time():
    """A floor is built from measured limits (bandwidths, the smallest kernel, the
    float32 peak, a limit row's copy of the same bytes), never from a version's or a
    peer's own time: no recorded floor equals the time of any version or peer of its
    benchmark."""
    same = []
    for ln in performance.summary().lines:
        if ln.floor is None:
            continue
        same += [f"{ln.key}: floor {ln.floor.ms:.6g} ms is {performance.label(r)}'s time"
                 for r in ln.result.entry["rows"]
                 if r["kind"] in ("kernel", "peer") and "time_ms" in r
                 and abs(performance.ms(r) - ln.floor.ms) <= 1e-9 * ln.floor.ms]
    assert not same, "\n".join(same)


def test_fair_compares_device_busy_times_where_both_rows_have_them():
    hist, cupy, torch, cpu = ROWS["busy"]
    assert performance.fair(hist, cupy) == (0.006, 0.13, performance.BUSY)
    # a CPU row has no busy time: both fall back to CUDA events (its wall clock)
    assert performance.fair(hist, cpu) == (0.010, 20.0, "events")
    add = ROWS["add"]
    assert performance.fair(add[1], add[3]) == (0.1, 0.11, "events")


def test_fastest_peer_is_chosen_by_the_fair_ratio_with_the_end_to_end_beside(bench_dir):
    record(bench_dir, ["busy"])
    ln = lines_by_name(performance.summary())["busy"]
    # by events torch.histc (0.15 ms) would be the faster peer; by busy time cupy's is
    assert ln.peer["name"] == "cupy.histogram" and ln.measured == performance.BUSY
    assert ln.speedup == pytest.approx(0.13 / 0.006)
    assert ln.e2e_speedup == pytest.approx(0.40 / 0.200)
    table = performance.table([ln])
    assert "cupy.histogram: 130 \u00b5s (ours 6 \u00b5s, device-busy)" in table
    assert f"| {0.13 / 0.006:,.2f}x<br>{0.40 / 0.2:,.2f}x end to end |" in table


def test_events_fallback_where_a_row_has_no_busy_time(bench_dir):
    record(bench_dir, ["add"])
    ln = lines_by_name(performance.summary())["add"]
    assert ln.measured == "events" and ln.e2e_speedup is None
    assert "device-busy" not in performance.table([ln])


def test_trailing_lists_a_best_version_slower_than_its_peer_measured_alike(bench_dir):
    record(bench_dir, ["trails", "busy", "add"])
    lines = performance.summary().lines
    said = performance.trailing(lines)
    # a queued library call: compared by events (0.089 vs 0.083 ms), not busy times
    assert said.splitlines() == ["* `matmul.fake_trails`: add_gridstride is 7% slower "
                                 "than torch.add (CUDA-event times)"]
    ahead = [ln for ln in lines if not ln.key.endswith("trails")]
    assert performance.trailing(ahead) == "*No best version trails its fastest peer.*"


def test_host_gaps_names_the_peer_whose_events_most_exceed_its_busy_time(bench_dir):
    record(bench_dir, ["busy", "trails", "add"])
    ln, row, events, busy = performance.host_gaps(performance.summary().lines)
    assert (ln.key, row["name"], events, busy) == ("matmul.fake_busy", "cupy.histogram",
                                                   0.40, 0.13)
    record(bench_dir, ["add"])
    assert performance.host_gaps(performance.summary().lines) is None
