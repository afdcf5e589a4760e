import pytest

from kernels import harness
from kernels import histogram_findings as hf

INPUTS = ["Shakespeare", "uniform over 128 bins", "all spaces"]


def timed(name, us, spread=0.01, **fields):
    ms = us / 1e3
    return {"name": name, "kind": "kernel", **fields,
            "time_ms": {"median": ms, "p10": ms * (1 - spread), "p90": ms * (1 + spread)}}


def result(key, rows, **params):
    return harness.Result(key, {"rows": rows, "params": params, "date": "2026-11-27"},
                          {"device": {"name": "a GPU"}}, {}, live=False, stale=False)


def private_rows(times):
    """times: {(blocks per SM, input): (lane-private µs, one-row µs)}"""
    rows = []
    for (per_sm, label), (lane, one) in times.items():
        rows += [timed(hf.LANE_PRIVATE, lane, input=label, blocks_per_sm=per_sm),
                 timed(hf.ONE_ROW, one, input=label, blocks_per_sm=per_sm)]
    return result("histogram.private_rows", rows, inputs=INPUTS,
                  blocks_per_sm=sorted({k[0] for k in times}))


@pytest.mark.parametrize("pairs,said", [
    ([(10, 10.1), (9, 9)], "about as fast"),
    ([(10, 12), (10, 11.5)], "15% to 20% faster"),
    ([(10, 11.2), (20, 22.4)], "12% faster"),
    ([(10, 16), (10, 21)], "1.6 to 2.1 times faster"),
    ([(12, 10), (13, 10)], "20% to 30% slower"),
    ([(10, 12), (10, 10)], None),
])
def test_compared_says_one_phrase_for_one_verdict_and_never_an_empty_range(pairs, said):
    rows = [(timed("a", a), timed("b", b)) for a, b in pairs]
    assert hf.compared(rows) == said


def test_rows_said_groups_inputs_by_verdict_and_prints_both_times():
    res = private_rows({(1, "Shakespeare"): (8.9, 8.8), (1, "uniform over 128 bins"): (9.1, 9.1),
                        (1, "all spaces"): (8.9, 8.5), (2, "Shakespeare"): (12.5, 10.7),
                        (2, "uniform over 128 bins"): (12.6, 12.5),
                        (2, "all spaces"): (12.4, 12.3)})
    at1, at2 = hf.rows_said(res).split("; ")
    assert at1.startswith("at 1 block per SM one row per block was about as fast as the "
                          "lane-private rows on every input (the text 8.8 µs against 8.9,")
    assert at2.startswith("at 2 blocks per SM one row per block was 17% faster than the "
                          "lane-private rows on the text and about as fast on uniform bytes "
                          "and all spaces (")
    assert hf.rows_summary(res) == ("about as fast on every input at 1 block per SM, and "
                                    "17% faster on the text and about as fast on uniform "
                                    "bytes and all spaces at 2 blocks per SM")
    assert hf.rows_verdict(res) == ("the lane-private rows did not make version 7 faster at "
                                    "any launch timed, and on nothing but spaces, the input "
                                    "they are designed for, one row per block was no slower")


def test_rows_verdict_names_where_the_lane_private_rows_win():
    res = private_rows({(1, label): (8.0, 8.0) for label in INPUTS[:2]}
                       | {(1, "all spaces"): (8.0, 12.0)})
    assert hf.rows_verdict(res) == ("the lane-private rows made version 7 faster on all "
                                    "spaces at 1 block per SM, and on nothing but spaces, the "
                                    "input they are designed for, one row per block was "
                                    "slower at 1 block per SM")


def placement(inside_us, own_us, again_us):
    rows = []
    for label in ("Shakespeare", "uniform over 128 bins"):
        places = ([(f"offset {k}", k, t) for k, t in enumerate(inside_us)]
                  + [(f"own {k}", None, t) for k, t in enumerate(own_us)]
                  + [("offset 0 again", 0, again_us)])
        rows += [timed("histogram_global_atomics", t, input=label, output=where,
                       offset_bytes=offset, order=order)
                 for order, (where, offset, t) in enumerate(places)]
    return result("histogram.placement", rows, inputs=["Shakespeare", "uniform over 128 bins"],
                  offsets_bytes=[0, 128, 1 << 10, 16 << 20])


def test_placed_splits_the_rows_in_the_order_they_were_timed():
    found = hf.placed(placement([2580, 2189], [1487, 1501], 2580))["Shakespeare"]
    assert [r["output"] for r in found["inside"]] == ["offset 0", "offset 1"]
    assert [r["output"] for r in found["own"]] == ["own 0", "own 1"]
    assert found["again"]["output"] == "offset 0 again"


def test_placement_said_gives_the_ranges_and_the_verdict_of_every_pair():
    said = hf.placement_said(placement([2580, 2189], [1487, 1501], 2580))
    assert said.startswith("On the text, 2,189 to 2,580 µs with the output at the 2 offsets "
                           "inside the one allocation (2,580 µs back at offset 0 at the end) "
                           "and 1,487 to 1,501 µs in the 2 allocations of its own: in an "
                           "allocation of its own the kernel was 1.5 to 1.7 times faster "
                           "than anywhere inside the one allocation; on uniform bytes,")
    mixed = hf.placement_said(placement([2580, 1490], [1487, 1501], 2580))
    assert "were not all on one side" in mixed


def test_placement_offsets_in_words():
    assert hf.placement_offsets(placement([1], [1], 1)) == "0 B, 128 B, 1 KiB and 16 MiB"
