"""What two experiments on the histogram found, in the words atomics.md glues.

Both read a recorded (or live) benchmark result of kernels.benchmarks.histogram and
choose their words from its numbers (kernels.compare), so a re-recording that changes
a finding changes the sentence:

* ``row_pairs(result)``         histogram.private_rows as {blocks per SM: [(input,
                                lane-private row, one-row row)]}
* ``rows_said(result)``         how one counter row per block compared with the
                                lane-private rows, launch by launch, with the times
* ``rows_summary(result)``      the same in a few words, for the chapter's summary
* ``rows_verdict(result)``      whether the lane-private rows made version 7 faster
                                anywhere, and whether one row lost on all spaces
* ``placed(result)``            histogram.placement as {input: {"inside": rows,
                                "own": rows, "again": row}}
* ``placement_offsets(result)`` the offsets tried inside the one allocation, in words
* ``placement_said(result)``    the times inside the one allocation and in allocations
                                of their own, and how they compare
"""

from kernels import compare

# the benchmarks' input labels as a sentence names them
INPUTS = {"Shakespeare": "the text", "uniform over 128 bins": "uniform bytes",
          "all spaces": "all spaces"}
ONE_ROW = "histogram_lean_count_one_row"
LANE_PRIVATE = "histogram_lean_count"


def _input(label):
    return INPUTS.get(label, label)


def _us(row):
    return compare.ms(row) * 1e3


def _span(values, digits):
    """'8.8' or '8.8 to 9.1' (never 'from a to a'): the range of `values`, formatted."""
    lo, hi = (f"{v:,.{digits}f}" for v in (min(values), max(values)))
    return lo if lo == hi else f"{lo} to {hi}"


def compared(pairs):
    """How the first row of each (row, reference) pair compares with the second, over
    all `pairs`, as one phrase: "about as fast", "12% to 15% faster", "1.5 to 2.0 times
    slower"; None where the pairs' verdicts differ."""
    words = {compare.verdict(a, b) for a, b in pairs}
    if len(words) != 1:
        return None
    word = words.pop()
    if word == "as fast":
        return "about as fast"
    ratios = [compare.ratio(a, b) if word == "faster" else compare.ratio(b, a)
              for a, b in pairs]
    if max(ratios) >= compare.TIMES_FROM:
        return f"{_span(ratios, 1)} times {word}"
    return f"{_span([100 * (r - 1) for r in ratios], 0).replace(' to ', '% to ')}% {word}"


def _than(phrase, what):
    return f"{phrase} {'as' if phrase.startswith('about') else 'than'} {what}"


def row_pairs(result):
    """{blocks per SM: [(input, lane-private row, one-row row)]}, inputs in recorded order."""
    pairs = {}
    for per_sm in result.entry["params"]["blocks_per_sm"]:
        pairs[per_sm] = [(label, result.get(LANE_PRIVATE, input=label, blocks_per_sm=per_sm),
                          result.get(ONE_ROW, input=label, blocks_per_sm=per_sm))
                         for label in result.entry["params"]["inputs"]]
    return pairs


def _launch_words(per_sm):
    return f"{per_sm} block{'' if per_sm == 1 else 's'} per SM"


def _and(words):
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else words[0]


def _verdicts(pairs, what=None):
    """'17% faster than `what` on the text and about as fast on uniform bytes and all
    spaces', or '... on every input': one row per block against the lane-private rows,
    the inputs grouped by verdict (`what` named once, in the first group)."""
    groups = {}
    for label, lane, one in pairs:
        groups.setdefault(compare.verdict(one, lane), []).append((label, lane, one))
    clauses = []
    for group in groups.values():
        said = compared([(one, lane) for _, lane, one in group])
        if what is not None and not clauses:
            said = _than(said, what)
        where = ("every input" if len(groups) == 1
                 else _and([_input(label) for label, _, _ in group]))
        clauses.append(f"{said} on {where}")
    return " and ".join(clauses)


def rows_said(result):
    """Launch by launch, how histogram_lean_count with one counter row per block compared
    with its lane-private rows, with both median times on every input."""
    parts = []
    for per_sm, pairs in row_pairs(result).items():
        times = ", ".join(f"{_input(label)} {_us(one):.1f} µs against {_us(lane):.1f}"
                          for label, lane, one in pairs)
        parts.append(f"at {_launch_words(per_sm)} one row per block was "
                     f"{_verdicts(pairs, 'the lane-private rows')} ({times})")
    return "; ".join(parts)


def rows_summary(result):
    """'about as fast on every input at 1 block per SM, and 17% faster on the text and
    about as fast on ... at 2': one row per block against the lane-private rows."""
    return ", and ".join(f"{_verdicts(pairs)} at {_launch_words(per_sm)}"
                         for per_sm, pairs in row_pairs(result).items())


def rows_verdict(result):
    """Whether the lane-private rows made version 7 faster at any launch, and whether one
    row per block was slower on all spaces (every lane of a warp on one counter), the
    input the lane-private rows are designed for: a clause for each, from the verdicts."""
    pairs = row_pairs(result)
    wins = [f"on {_input(label)} at {_launch_words(per_sm)}"
            for per_sm, rows in pairs.items() for label, lane, one in rows
            if compare.verdict(lane, one) == "faster"]
    said = ("the lane-private rows did not make version 7 faster at any launch timed"
            if not wins else f"the lane-private rows made version 7 faster {_and(wins)}")
    hot = [(per_sm, compare.verdict(one, lane)) for per_sm, rows in pairs.items()
           for label, lane, one in rows if label == "all spaces"]
    if not hot:
        return said
    slower = [_launch_words(per_sm) for per_sm, word in hot if word == "slower"]
    return said + (", and on nothing but spaces, the input they are designed for, one "
                   + ("row per block was no slower" if not slower
                      else f"row per block was slower at {_and(slower)}"))


def placed(result):
    """{input: {"inside": rows at offsets of the one allocation, "own": rows in
    allocations of their own, "again": the row back at offset 0, timed last}}."""
    found = {}
    for label in result.entry["params"]["inputs"]:
        rows = sorted(result.rows(input=label), key=lambda r: r["order"])
        own = [r for r in rows if r["offset_bytes"] is None]
        inside = [r for r in rows if r["offset_bytes"] is not None]
        found[label] = {"inside": inside[:-1], "own": own, "again": inside[-1]}
    return found


def _bytes(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size:,} {unit}"
    return f"{n:,} B"


def placement_offsets(result):
    """'0 B, 128 B, 1 KiB, ... and 16 MiB': the offsets tried inside the one allocation."""
    said = [_bytes(n) for n in result.entry["params"]["offsets_bytes"]]
    return ", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else said[0]


def placement_said(result):
    """Input by input, the times with the output inside the one allocation (at every
    offset, and back at offset 0 at the end) and in allocations of its own, and how the
    own allocations compared with the places inside the one allocation (every pair)."""
    parts = []
    for label, rows in placed(result).items():
        inside, own = rows["inside"], rows["own"]
        said = compared([(o, i) for o in own for i in inside])
        verdict = ("in an allocation of its own the kernel was "
                   + _than(said, "anywhere inside the one allocation")
                   if said is not None else "the allocations of its own were not all on "
                   "one side of the places inside the one allocation")
        parts.append(
            f"on {_input(label)}, {_span([_us(r) for r in inside], 0)} µs with the output "
            f"at the {len(inside)} offsets inside the one allocation "
            f"({_us(rows['again']):,.0f} µs back at offset 0 at the end) and "
            f"{_span([_us(r) for r in own], 0)} µs in the {len(own)} allocations of its "
            f"own: {verdict}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:]
