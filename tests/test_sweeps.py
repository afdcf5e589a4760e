"""The size sweeps of the performance page (kernels/sweeps.py), on made-up and real
recordings."""

import json

import matplotlib
import matplotlib.pyplot as plt
import pytest

from kernels import harness, plots, sweeps

DEVICE = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0], "sm_count": 132,
          "simulator": False, "l2_bytes": 50_000_000, "clock_khz": 1_980_000}
LIMITS = {"copy_gbps": 3000.0, "h2d_gbps": 50.0, "d2h_gbps": 48.0, "kernel_ms": 0.004,
          "fp32_tflops": 60.0}
COLD, WARM = sweeps.COLD, "warm"


def timed(name, kind, ms, l2=COLD, **fields):
    t = {"median": ms, "p10": ms, "p90": ms, "min": ms, "repeats": 5}
    return {"name": name, "kind": kind, "time_ms": t, "l2": l2, **fields}


def source_of_fake():
    pass


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """A fake memory sweep: a fixed 0.008 ms, then 2.5 TB/s; warm 30% faster below L2."""
    monkeypatch.setattr(harness.recording, "BENCH_DIR", tmp_path)
    harness.load_benchmarks()
    key = "matmul.fake_sweep"
    monkeypatch.setitem(harness.recording.BENCHMARKS, key,
                        harness.Benchmark(key, source_of_fake, (source_of_fake,)))
    monkeypatch.setitem(sweeps.SWEEPS, key, sweeps.Spec("bytes", "bytes", 1.0, "fake"))
    rows = []
    for n in (1 << 16, 1 << 20, 1 << 24, 1 << 28):
        cold = 0.008 + n / 2.5e9
        rows += [timed("mine", "kernel", cold, bytes=n),
                 timed("mine", "kernel", cold * (0.7 if n < 50e6 else 1.0), l2=WARM, bytes=n),
                 timed("peer", "peer", 2 * cold, bytes=n)]
    data = {"schema": 1, "device": DEVICE, "numba_cuda": "0.30.4", "numpy": "2.4",
            "python": "3.11", "driver": "13.0", "limits": LIMITS,
            "benchmarks": {key: {"description": "fake", "params": {}, "rows": rows,
                                 "date": "2026-11-24T12:00:00+00:00", "limits": LIMITS,
                                 "source_hash": harness.source_hash(source_of_fake)}}}
    (tmp_path / "nvidia-h100-80gb-hbm3.json").write_text(json.dumps(data))
    yield sweeps.load(key)
    plt.close("all")


def test_series_split_cold_warm_and_peers_and_the_floor_is_bytes_over_copy(sweep):
    assert {k: v[0] for k, v in sweep.series.items()} == {
        "mine": "kernel", "mine, warm L2": "warm", "peer": "peer"}
    sizes, floor = sweep.floor
    assert list(sizes) == [1 << 16, 1 << 20, 1 << 24, 1 << 28]
    assert floor == pytest.approx(sizes / 3000e9 * 1e3 + 0.004)


def test_facts_fixed_cost_flat_part_l2_asymptote_and_peer(sweep):
    f = sweeps.facts(sweep)
    assert f["best"] == "mine" and f["small_us"] == pytest.approx((0.008 + 2**16 / 2.5e9) * 1e3)
    # the last size within 25% of the smallest size's time (0.0080 ms): 2**20 takes
    # 0.0084 ms, 2**24 0.0147 ms
    assert f["flat_until"] == 1 << 20
    assert f["l2_gain"] == pytest.approx(1 / 0.7) and f["l2_size"] < 50e6
    assert f["large_of_copy"] == pytest.approx(2**28 / (0.008 + 2**28 / 2.5e9) / 1e6 / 3000)
    assert f["peer"] == "peer" and f["peer_large_x"] == pytest.approx(2.0)


def test_figure_fits_the_column_with_legible_text(sweep):
    fig = sweeps.figure(sweep)
    assert fig.get_figwidth() == plots.WIDTH_IN
    assert plots.smallest_text_pt(fig) >= plots.MIN_PT
    assert "time against size\nNVIDIA H100" in fig.get_suptitle()


def test_a_sweep_not_recorded_is_none(sweep, monkeypatch):
    monkeypatch.setitem(sweeps.SWEEPS, "matmul.nothing", sweeps.Spec("n", "n", None, "x"))
    monkeypatch.setitem(harness.recording.BENCHMARKS, "matmul.nothing",
                        harness.Benchmark("matmul.nothing", source_of_fake, (source_of_fake,)))
    assert sweeps.load("matmul.nothing") is None


@pytest.mark.parametrize("key", sorted(sweeps.SWEEPS))
def test_no_recorded_cold_run_beats_its_floor(key):
    found = sweeps.load(key)
    if found is None:
        pytest.skip(f"{key} not recorded yet")
    floor = dict(zip(*found.floor))
    beaten = [f"{label} at {x:,}: {ms:.4g} ms < {floor[x]:.4g} ms"
              for label, (kind, xs, mss) in found.series.items() if kind in ("kernel", "peer")
              for x, ms in zip(xs, mss) if ms < floor[x]]
    assert not beaten, "\n".join(beaten)


@pytest.mark.parametrize("key", sorted(sweeps.SWEEPS))
def test_every_legend_entry_is_drawn_its_own_way(key):
    """Two peers drawn alike (cupy.bincount and torch.bincount, both orange diamonds)
    cannot be told apart by the legend: every entry differs in colour, marker or line."""
    found = sweeps.load(key)
    if found is None:
        pytest.skip(f"{key} not recorded yet")
    handles, labels = sweeps.figure(found).axes[0].get_legend_handles_labels()
    styles = {}
    for handle, label in zip(handles, labels):
        style = (matplotlib.colors.to_hex(handle.get_color()), handle.get_marker(),
                 handle.get_linestyle(), handle.get_markerfacecolor() == "none")
        styles.setdefault(style, []).append(label)
    alike = [names for names in styles.values() if len(names) > 1]
    plt.close("all")
    assert not alike, f"{key}: legend entries drawn alike: {alike}"
