"""The words that compare two recorded times, chosen by the numbers.

Chapters glue these phrases into their prose and the claims tests
(``tests/test_claims_<chapter>.py``, on every recording kept) assert the verdicts, so a
sentence that says "faster" cannot sit beside numbers that say "slower": a
re-recording that flips a comparison changes the word, or fails a test.

* ``ms(x)``             a time in ms: a number, or a recorded row (its median GPU time)
* ``bounds(x)``         the range a time is known to (a row's p10-p90 band)
* ``ratio(t, ref)``     how many times faster `t` is than `ref` (ref / t)
* ``verdict(t, ref)``   "faster", "as fast" or "slower": `t` against `ref`, "as fast"
                        unless their bands stay apart by more than BAND
* ``phrase(t, ref, than="NumPy")``  "1.7 times faster than NumPy", "12% faster ...",
                        "about as fast as NumPy", "3% slower ..." (`than` optional)
* ``single_runs(runs)`` how far single runs (a timeline each) end from their medians,
                        in words: "within 8% ..." or which one strays, and by how much

Against a peer, times measured alike (``alike``): CUDA events where both calls were
queued behind the same spin kernel (their device time, each call's own gaps between
its kernels included); the device-busy time from the profiler where a call waits for
the GPU inside (a ``timed`` row), whose events would count host work too.

* ``alike(a, b)``       (a, b, how): the two rows with the fair measure as their time,
                        and its name, BUSY or EVENTS (UNEVEN: no fair one recorded)
* ``fair(a, b)``        (ms of a, ms of b, how), measured alike
* ``speedup(t, peer)``  the peer's time over `t`'s, measured alike (below 1: `t` trails)
* ``fastest(t, peers)`` the peer that `t` is least ahead of, measured alike
* ``e2e_ratio(t, peer)``  the same ratio end to end (as a Python caller waits), or None
* ``end_to_end(r)``     the row with its end-to-end time as its time (for phrase)
* ``MEASURED[how]``     how to say which times a sentence compares
"""

# The same work timed in two benchmarks of one recording differs by up to about 3%
# (e.g. sum_unrolled: 21.1 us in reduction.sum_int32, 20.9 in reduction.blocks_sweep),
# whatever its repeats' own spread: two times whose p10-p90 bands come closer than this
# (relative) are no finding.
BAND = 0.03

# From this ratio on a difference reads as "N times"; below it, as a percentage.
TIMES_FROM = 1.5


def ms(x):
    """A time in ms: `x` itself, or the median GPU time of a recorded row."""
    if isinstance(x, dict):
        if "time_ms" not in x:
            raise ValueError(f"row {x.get('name', x)!r} has no 'time_ms': not a timed row")
        return float(x["time_ms"]["median"])
    value = float(x)
    if not value > 0:
        raise ValueError(f"a time must be a positive number of ms, got {x!r}")
    return value


def bounds(x):
    """The range a time is known to: a recorded row's p10-p90 band of repeats (its
    median inside it), or a plain number alone."""
    if isinstance(x, dict) and {"p10", "p90"} <= set(x.get("time_ms", {})):
        t = x["time_ms"]
        return min(t["p10"], ms(x)), max(t["p90"], ms(x))
    return ms(x), ms(x)


BUSY = "device-busy"  # the profiler's sum of a call's kernel, copy and memset durations
EVENTS = "events"     # CUDA events around the call (a CPU row's: its wall clock)
UNEVEN = "events, host work included"  # a call that waits inside, without busy times
MEASURED = {BUSY: "device-busy time from the profiler (the time the GPU spent on each "
                  "call's kernels, copies and memsets, overlaps counted once: the "
                  "same measure on both sides, as one call waits for the GPU inside)",
            EVENTS: "CUDA-event times (a GPU call queued behind the same spin kernel "
                    "as ours; a CPU peer's wall clock)",
            UNEVEN: "CUDA events, which count the library call's host work too (no "
                    "profiler times here): an upper bound on its GPU time"}


def alike(a, b):
    """(a, b, how): two recorded rows with their times measured alike, as rows that
    ms, bounds, verdict and phrase read. Where one call waits for the GPU inside (its
    row says how it was ``timed``), events around it count its host work too: then the
    device-busy time from the profiler for both, where both rows have one. Else their
    CUDA-event times: both calls were queued behind the same spin kernel, so events see
    each one's device time, the gaps between its own kernels included, which a sum of
    kernel durations would leave out (favouring a call of several kernels)."""
    blocking = "timed" in a or "timed" in b
    if blocking and "busy_ms" in a and "busy_ms" in b:
        return {**a, "time_ms": a["busy_ms"]}, {**b, "time_ms": b["busy_ms"]}, BUSY
    return a, b, UNEVEN if blocking else EVENTS


def fair(a, b):
    """(ms of a, ms of b, how): their median times measured alike (see alike)."""
    a, b, how = alike(a, b)
    return ms(a), ms(b), how


def speedup(t, peer):
    """How many times faster `t` is than `peer` on the same problem: the peer's time
    over `t`'s, measured alike (see alike). Below 1: `t` trails the peer."""
    mine, theirs, _ = fair(t, peer)
    return theirs / mine


def fastest(t, peers):
    """The peer `t` is least ahead of (or furthest behind), measured alike with `t`
    row by row; None for no peers."""
    return min(peers, key=lambda r: speedup(t, r), default=None)


def end_to_end(r):
    """Row `r` with its end-to-end time (one call as a Python caller waits for it, host
    work included) as its time, for ms, verdict and phrase."""
    if "e2e_ms" not in r:
        raise ValueError(f"row {r.get('name', r)!r} has no end-to-end time ('e2e_ms')")
    return {**r, "time_ms": r["e2e_ms"]}


def e2e_ratio(t, peer):
    """The peer's end-to-end time over `t`'s, or None where a row has none."""
    if not all("e2e_ms" in r for r in (t, peer)):
        return None
    return ratio(end_to_end(t), end_to_end(peer))


def ratio(t, ref):
    """How many times faster `t` is than `ref`: ref / t (below 1: slower)."""
    return ms(ref) / ms(t)


def verdict(t, ref, band=BAND):
    """"faster", "as fast" or "slower": `t` against `ref`. A difference counts only
    where the two rows' p10-p90 bands stay apart by more than `band` (relative): a
    verdict then cannot flip while the medians move inside their own noise, and
    "faster" always means a ratio above 1 + `band`."""
    t_lo, t_hi = bounds(t)
    ref_lo, ref_hi = bounds(ref)
    if t_hi * (1 + band) < ref_lo:
        return "faster"
    if t_lo > ref_hi * (1 + band):
        return "slower"
    return "as fast"


def phrase(t, ref, band=BAND, than=None):
    """`t` against `ref` in words: "1.7 times faster", "12% faster", "about as fast",
    "8% slower", "2.3 times slower"; with `than` ("NumPy"), the comparison's object
    follows in the right grammar: "... faster than NumPy", "about as fast as NumPy"."""
    word = verdict(t, ref, band)
    if word == "as fast":
        return "about as fast" + (f" as {than}" if than else "")
    r = ratio(t, ref) if word == "faster" else 1 / ratio(t, ref)
    words = (f"{r:,.{0 if r >= 10 else 1}f} times {word}" if r >= TIMES_FROM
             else f"{100 * (r - 1):.0f}% {word}")
    return words + (f" than {than}" if than else "")


# A single run whose time is within this of its pipeline's median hardly changes a
# picture of its work (timelines: kernels.streams.Timeline).
SINGLE_RUN_CLOSE = 0.15


def single_runs(runs):
    """`runs`: [(label, a single run's time, the median of the same work)]. The clause
    that says how far they end from their medians: all within SINGLE_RUN_CLOSE, or the
    one furthest off, by how much."""
    label, t, median = max(runs, key=lambda r: abs(r[1] / r[2] - 1))
    off = t / median - 1
    if abs(off) <= SINGLE_RUN_CLOSE:
        return (f"each of these runs ends within {100 * abs(off):.0f}% of the same "
                "work's median time above: the events change the picture little")
    return (f"the run of {label} ends {100 * abs(off):.0f}% "
            f"{'later' if off > 0 else 'sooner'} than the same work's median time above: "
            "a single run strays that far, so read these timelines for the order of the "
            "work, not for its time")

