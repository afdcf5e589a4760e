"""The words that compare two recorded times, chosen by the numbers.

Chapters glue these phrases into their prose and ``tests/test_claims.py`` asserts
the verdicts, so a sentence that says "faster" cannot sit beside numbers that say
"slower": a re-recording that flips a comparison changes the word, or fails a test.

* ``ms(x)``             a time in ms: a number, or a recorded row (its median GPU time)
* ``noise(*xs)``        the relative difference below which two times count as equal
* ``ratio(t, ref)``     how many times faster `t` is than `ref` (ref / t)
* ``verdict(t, ref)``   "faster", "as fast" or "slower": `t` against `ref`
* ``phrase(t, ref, than="NumPy")``  "1.7 times faster than NumPy", "12% faster ...",
                        "about as fast as NumPy", "3% slower ..." (`than` optional)
"""

# The same work timed in two benchmarks of one recording differs by up to about 3%
# (e.g. sum_unrolled: 21.1 us in reduction.sum_int32, 20.9 in reduction.blocks_sweep),
# whatever its repeats' own spread: below this relative difference no comparison is a
# finding.
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


def _spread(x):
    """Half the p10-p90 range of a row's repeats, relative to its median (0 for a number)."""
    if isinstance(x, dict) and {"p10", "p90"} <= set(x.get("time_ms", {})):
        t = x["time_ms"]
        return (t["p90"] - t["p10"]) / 2 / t["median"]
    return 0.0


def noise(*xs):
    """The relative difference under which times `xs` count as equal: BAND, or more
    where a recorded row's own repeats spread wider."""
    return max([BAND] + [_spread(x) for x in xs])


def ratio(t, ref):
    """How many times faster `t` is than `ref`: ref / t (below 1: slower)."""
    return ms(ref) / ms(t)


def verdict(t, ref, band=None):
    """"faster", "as fast" or "slower": `t` against `ref`, equal within `band`
    (relative; default ``noise(t, ref)``)."""
    band = noise(t, ref) if band is None else band
    r = ratio(t, ref)
    if r > 1 + band:
        return "faster"
    if r < 1 / (1 + band):
        return "slower"
    return "as fast"


def phrase(t, ref, band=None, than=None):
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
