"""kernels.compare: the comparative words are chosen by the numbers."""

import re

import pytest

from kernels import compare


def row(median, p10=None, p90=None):
    p10, p90 = (median, median) if p10 is None else (p10, p90)
    return {"name": "r", "kind": "kernel",
            "time_ms": {"median": median, "p10": p10, "p90": p90, "min": p10, "repeats": 5}}


@pytest.mark.parametrize("t, ref, words", [
    (3.18, 5.31, "1.7 times faster"),
    (0.949, 5.31, "5.6 times faster"),
    (0.5, 50.0, "100 times faster"),
    (1.0, 2669.4, "2,669 times faster"),
    (1.0, 1.12, "12% faster"),
    (1.0, 1.02, "about as fast"),
    (1.02, 1.0, "about as fast"),
    (1.08, 1.0, "8% slower"),
    (2.7, 1.0, "2.7 times slower"),
])
def test_phrase_follows_the_ratio(t, ref, words):
    assert compare.phrase(t, ref) == words


def test_than_names_the_reference_in_the_right_grammar():
    assert compare.phrase(3.18, 5.31, than="NumPy") == "1.7 times faster than NumPy"
    assert compare.phrase(1.0, 1.01, than="NumPy") == "about as fast as NumPy"
    assert compare.phrase(1.1, 1.0, than="NumPy") == "10% slower than NumPy"


def test_verdict_flips_with_the_numbers():
    assert compare.verdict(1.0, 2.0) == "faster"
    assert compare.verdict(2.0, 1.0) == "slower"
    assert compare.verdict(1.0, 1.0) == "as fast"
    assert compare.ratio(1.0, 2.0) == 2.0


def test_an_explicit_band_wins():
    assert compare.verdict(1.0, 1.2, band=0.25) == "as fast"
    assert compare.verdict(1.0, 1.02, band=0.01) == "faster"
    assert compare.phrase(1.0, 1.02, band=0.01) == "2% faster"


def test_rows_differ_only_where_their_bands_stay_apart():
    steady, noisy = row(1.0), row(1.15, 0.9, 1.4)  # noisy spreads -22%..+22% about 1.15
    assert compare.ms(noisy) == 1.15
    assert compare.bounds(noisy) == (0.9, 1.4) and compare.bounds(steady) == (1.0, 1.0)
    assert compare.verdict(steady, noisy) == "as fast"
    assert compare.verdict(steady, row(1.15)) == "faster"
    # bands apart, but by less than BAND: no finding
    assert compare.verdict(row(1.0, 0.99, 1.01), row(1.05, 1.03, 1.07)) == "as fast"
    assert compare.verdict(row(1.0, 0.99, 1.01), row(1.10, 1.08, 1.12)) == "faster"


def test_a_verdict_does_not_flip_while_medians_move_inside_their_bands():
    """Item 3 of issue 35: whatever the medians inside their p10-p90 bands, the word is
    the same, and "faster" or "slower" comes with a ratio past 1 + BAND."""
    import random
    rng = random.Random(35)
    for _ in range(2000):
        a_lo, b_lo = rng.uniform(1, 2), rng.uniform(1, 2)
        a_hi, b_hi = a_lo * rng.uniform(1, 1.3), b_lo * rng.uniform(1, 1.3)
        words = set()
        for _ in range(5):
            a = row(rng.uniform(a_lo, a_hi), a_lo, a_hi)
            b = row(rng.uniform(b_lo, b_hi), b_lo, b_hi)
            word = compare.verdict(a, b)
            words.add(word)
            r = compare.ratio(a, b)
            assert {"faster": r > 1 + compare.BAND, "slower": r < 1 / (1 + compare.BAND),
                    "as fast": True}[word], (word, r)
            words_said = compare.phrase(a, b)
            assert not re.search(r"(^|[^\d.])0% |-", words_said), words_said
        assert len(words) == 1, words


def test_bad_times_are_refused():
    with pytest.raises(ValueError, match="positive number of ms"):
        compare.ms(0)
    with pytest.raises(ValueError, match="not a timed row"):
        compare.ms({"name": "x", "kind": "limit"})


def with_busy(r, median, p10=None, p90=None, e2e=None):
    band = row(median, p10, p90)["time_ms"]
    return {**r, "busy_ms": band, **({"e2e_ms": row(e2e)["time_ms"]} if e2e else {})}


BLOCKING = {"timed": "CUDATimer per call (the call may synchronise)"}


def test_alike_takes_busy_times_only_against_a_call_that_waits_inside():
    ours = with_busy(row(0.010), 0.006, 0.0059, 0.0061)
    lib = {**with_busy(row(0.40), 0.13, 0.129, 0.131), **BLOCKING}
    # a queued library call: events for both, each call's own kernel gaps included
    queued = with_busy(row(0.012), 0.007)
    assert compare.fair(ours, queued) == (0.010, 0.012, compare.EVENTS)
    a, b, how = compare.alike(ours, lib)
    assert how == compare.BUSY and (compare.ms(a), compare.ms(b)) == (0.006, 0.13)
    assert compare.bounds(a) == (0.0059, 0.0061)  # the busy band, for the verdict
    cpu = row(20.0)
    a, b, how = compare.alike(ours, cpu)
    assert how == compare.EVENTS and (compare.ms(a), compare.ms(b)) == (0.010, 20.0)
    assert compare.fair(ours, lib) == (0.006, 0.13, compare.BUSY)
    assert compare.speedup(ours, lib) == pytest.approx(0.13 / 0.006)
    assert set(compare.MEASURED) == {compare.BUSY, compare.EVENTS, compare.UNEVEN}
    # against a call that waits inside, without busy times, the comparison says so
    assert compare.fair(ours, {**row(0.40), **BLOCKING})[2] == compare.UNEVEN


def test_fastest_is_the_peer_least_behind_by_the_fair_measure():
    ours = with_busy(row(0.010), 0.006)
    # both wait inside: slow by events (host gaps), fast by busy time
    cupy = {**with_busy(row(0.40), 0.13), **BLOCKING}
    torch = {**with_busy(row(0.15), 0.14), **BLOCKING}
    assert compare.fastest(ours, [torch, cupy]) is cupy
    assert compare.fastest(ours, []) is None
    # a peer without busy time is compared by events, row by row
    assert compare.fastest(ours, [cupy, row(0.05)])["time_ms"]["median"] == 0.05


def test_end_to_end_rows_and_ratio():
    ours = with_busy(row(0.010), 0.006, e2e=0.2)
    lib = with_busy(row(0.40), 0.13, e2e=0.4)
    assert compare.ms(compare.end_to_end(ours)) == 0.2
    assert compare.e2e_ratio(ours, lib) == pytest.approx(2.0)
    assert compare.phrase(compare.end_to_end(ours), compare.end_to_end(lib)) == "2.0 times faster"
    assert compare.e2e_ratio(ours, row(1.0)) is None
    with pytest.raises(ValueError, match="end-to-end"):
        compare.end_to_end(row(1.0))
