"""The recorded GPU timings the book shows: valid, complete, and not stale."""

import dataclasses

import pytest

from kernels import harness

RECORDINGS = harness.recordings()
BENCHMARKS = harness.load_benchmarks()
TOP_KEYS = {"schema", "device", "numba_cuda", "numpy", "python", "driver", "limits",
            "benchmarks"}
ENTRY_KEYS = {"description", "params", "rows", "source_hash", "date"}
TIME_KEYS = {"median", "p10", "p90", "min", "repeats"}


def test_there_is_a_recording():
    assert RECORDINGS, f"no recordings in {harness.recording.BENCH_DIR}: run `make bench` on a GPU"


@pytest.mark.parametrize("path", sorted(RECORDINGS), ids=lambda p: p.name)
def test_schema(path):
    data = RECORDINGS[path]
    assert TOP_KEYS <= set(data), f"missing {TOP_KEYS - set(data)}"
    assert data["schema"] == harness.recording.SCHEMA
    assert not data["device"]["simulator"] and data["device"]["sm_count"] > 0
    assert path.stem == harness.slug(data["device"]["name"])
    for key in ("copy_gbps", "h2d_gbps", "d2h_gbps"):
        assert data["limits"][key] > 0
    for key, entry in data["benchmarks"].items():
        assert ENTRY_KEYS <= set(entry), f"{key}: missing {ENTRY_KEYS - set(entry)}"
        assert entry["rows"], f"{key}: no rows"
        for r in entry["rows"]:
            assert r["kind"] in ("kernel", "peer", "limit"), f"{key}: kind {r['kind']!r}"
            if "time_ms" in r:
                assert TIME_KEYS <= set(r["time_ms"]) and r["time_ms"]["median"] > 0


@pytest.mark.parametrize("key", sorted(BENCHMARKS))
def test_every_benchmark_recorded_and_current(key):
    result = harness.recorded(key)
    assert not result.stale, (
        f"{key}: the recording ({result.entry['source_hash']}, {result.entry['date']}) was "
        f"made with other kernels than the current ones ({BENCHMARKS[key].source_hash()}): "
        f"re-run `python -m kernels bench {key.split('.')[0]}` on a GPU")


def test_stale_recording_is_flagged(monkeypatch):
    key = sorted(BENCHMARKS)[0]
    monkeypatch.setattr(BENCHMARKS[key], "covers", (test_schema,))
    result = harness.recorded(key)
    assert result.stale and "STALE" in result.caption


def test_where_names_the_recording_or_the_live_run():
    result = harness.recorded(sorted(BENCHMARKS)[0])
    dev, date = result.env["device"]["name"], result.entry["date"][:10]
    assert result.where == f"the {dev} recording of {date}"
    live = dataclasses.replace(result, live=True)
    assert live.where == f"this run on the {dev}" and "recording" not in live.where
