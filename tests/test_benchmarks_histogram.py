"""The histogram benchmarks that test the chapter's explanations, run on the simulator
with the GPU timer replaced: every row is checked against the reference before it is
timed, and the rows cover what the entry says it measured."""

import numpy as np
import pytest

from kernels import harness
from kernels import histogram as h
from kernels import histogram_rows as hr
from kernels.benchmarks import histogram as bench
from kernels.harness.checking import MismatchError
from kernels.harness.timing import Timing


@pytest.fixture
def timed(monkeypatch):
    """The calls the benchmark timed, each run once (small launches: the simulator runs
    every thread)."""
    calls = []

    def time_gpu(fn, **kw):
        fn()
        calls.append(fn)
        return Timing([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], kw.get("cold", False))

    monkeypatch.setattr(harness, "time_gpu", time_gpu)
    monkeypatch.setattr(h, "default_launch", lambda version: (2, 64))
    return calls


def test_private_rows_times_each_version_both_ways_on_every_input(timed):
    entry = bench.private_rows()
    per_pair = len(bench.PRIVATE_ROWS_BLOCKS_PER_SM) * len(entry["params"]["inputs"])
    assert len(entry["rows"]) == len(timed) == 2 * len(hr.ONE_ROW) * per_pair
    seen = {(r["name"], r["counter_rows"], r["input"], r["blocks"]) for r in entry["rows"]}
    assert len(seen) == len(entry["rows"])
    for lane_private, one_row in hr.ONE_ROW.items():
        for r in entry["rows"]:
            if r["name"] == lane_private:  # its one-row twin ran at the same launch
                assert (one_row.__name__, 1, r["input"], r["blocks"]) in seen
                assert r["counter_rows"] == h.WARP
    assert {r["input"] for r in entry["rows"]} >= {"Shakespeare", "uniform over 128 bins"}
    assert all(r["time_ms"]["p10"] <= r["time_ms"]["p90"] for r in entry["rows"])


def test_private_rows_checks_a_version_before_it_is_timed(timed, monkeypatch):
    def wrong(data, out=None, **launch):  # one count off
        out = hr.histogram_lean_count_one_row(data, out, **launch)
        out[ord("e")] = out[ord("e")] + 1
        return out

    wrong.__name__ = "histogram_lean_count_one_row"
    monkeypatch.setattr(hr, "ONE_ROW", {"histogram_lean_count": wrong})
    with pytest.raises(MismatchError):
        bench.private_rows()
    assert len(timed) == 1  # the lane-private version of the first case, not the wrong one


def test_placement_puts_the_output_in_distinct_places_and_times_each_on_both_inputs(timed):
    outputs = bench._placed_outputs()
    distinct = {id(out) for _, _, out in outputs}
    assert len(distinct) == len(bench.PLACEMENT_OFFSETS) + bench.PLACEMENT_FRESH
    for _, offset, out in outputs:
        assert out.shape == (h.BINS,) and out.dtype == np.int64
    entry = bench.placement()
    assert len(entry["rows"]) == len(timed) == 2 * len(outputs)
    for label in entry["params"]["inputs"]:
        mine = [r for r in entry["rows"] if r["input"] == label]
        assert [r["order"] for r in mine] == list(range(len(outputs)))
        assert [r["offset_bytes"] for r in mine] == [o for _, o, _ in outputs]
    assert entry["rows"][0]["output"] == "offset 0 B of one allocation"


def test_placement_outputs_at_offsets_are_views_of_one_allocation():
    outputs = bench._placed_outputs()
    first = outputs[0][2]
    assert outputs[0][1] == 0 and outputs[-1][2] is first
    for _, offset, out in outputs[1:len(bench.PLACEMENT_OFFSETS)]:
        first[:] = 0
        out[0] = 99  # written through a view that starts inside the first one's counters
        if offset < first.nbytes:
            assert first.copy_to_host()[offset // first.dtype.itemsize] == 99, offset
