"""Text pictures of races, for reports read as plain text: a checker's printed report,
the grader's feedback file, Gradescope's output, a terminal.

race_text         one launch's race: what each of the two threads did to the elements
                  around the racing one (1D: one row each; 2D and up: a few rows each)
stream_race_text  a race between streams: the device bytes each of the two operations
                  reads or writes, and the two streams' queues in the order issued
text              either, by the kind of race

Every line fits WIDTH characters; a large array shows a window around the racing
element, with … where the array goes on. The racing pair is marked [ ].
(kernels.trace.pictures draws figures for the book.)
"""

import collections
import math
import textwrap

from kernels.trace import hazards
from kernels.trace.model import HOST, index_text

WIDTH = 72  # a checker's report indents a detail by 8 columns: 80 in all
MOST_COLUMNS = 11  # elements shown along an array's last axis, at most
ROWS_AROUND = 1  # rows shown above and below the racing element's row (2D and up)
MEMORY_CELLS = 40  # cells the device bytes of a stream race are drawn in, at most
LETTER = {"read": "R", "write": "W", "atomic": "A"}
GAP = "  "


def text(trace, race):
    """The picture of `race`, a Race or a StreamRace of `trace`."""
    if isinstance(race, hazards.StreamRace):
        return stream_race_text(trace, race)
    return race_text(trace, race)


# ------------------------------------------------------------ a launch's race


def race_text(trace, race):
    """What the two racing threads did to the elements around race.index, one row of
    cells per thread (per thread and row of the array, from 2D up), their racing
    accesses in [ ], then what is missing between them."""
    launch = trace.launches[race.launch]
    info = launch.arrays[race.array]
    shape, shared = info["shape"], info["space"] == "shared"
    pair = [(race.first.block, race.first.tid), (race.second.block, race.second.tid)]
    did = [collections.defaultdict(set), collections.defaultdict(set)]
    others = set()
    for a in launch.accesses:  # one pass: the race case stays as fast as it was
        if a.array != race.array or (shared and a.block != race.first.block):
            continue
        who = (a.block, a.tid)
        if who in pair:
            did[pair.index(who)][a.index].add(a.kind)
        elif a.index == race.index:
            others.add(who)

    def cell(k, index):
        letters = "".join(LETTER[kind] for kind in LETTER if kind in did[k].get(index, ()))
        return f"[{letters}]" if index == race.index else letters or "·"

    *lead, col = race.index
    rows = [tuple(lead)]
    if lead:
        r, n_rows = lead[-1], shape[-2]
        rows = [(*lead[:-1], i) for i in range(max(r - ROWS_AROUND, 0),
                                               min(r + ROWS_AROUND + 1, n_rows))]
    names = [_who(race.first, launch), _who(race.second, launch)]
    row_names = [f"row {_row_name(r, shape)}" for r in rows] if lead else []
    name_width = max(map(len, names))
    row_width = max(map(len, row_names), default=0)
    left = name_width + len(GAP) + (row_width + len(GAP) if lead else 0)
    columns, width = _window(shape[-1], col, left,
                             lambda j: max(len(cell(k, (*r, j))) for k in (0, 1) for r in rows))
    header = " " * left + "".join(("…" if j is None else str(j)).center(width)
                                  for j in columns)
    lines = _wrapped(_caption(race, launch, columns, rows)) + [header.rstrip()]
    for k, name in enumerate(names):
        for i, r in enumerate(rows):
            label = (name if i == 0 else "").ljust(name_width) + GAP
            if lead:
                label += row_names[i].ljust(row_width) + GAP
            cells = "".join(("…" if j is None else cell(k, (*r, j))).center(width)
                            for j in columns)
            lines.append((label + cells).rstrip())
    element = f"{race.array}[{index_text(race.index)}]"
    lines += _wrapped(f"[ ] {_what(race.first)} by {names[0]} and {_what(race.second)} "
                      f"by {names[1]}: nothing orders them")
    lines += _wrapped(f"missing: {race.missing}")
    more = ("" if not others else f"1 more thread touches {element}; " if len(others) == 1
            else f"{len(others)} more threads touch {element}; ")
    lines += _wrapped(f"{more}R read, W write, A atomic, · untouched")
    return "\n".join(lines)


def _who(access, launch):
    """'block (1,0) thread (3,2)': as many dimensions as the launch's grid and block
    have, the same for every thread of the launch."""
    return (f"block {_dims(access.block, launch.grid)} "
            f"thread {_dims(access.thread, launch.block)}")


def _dims(index, size):
    n = 3 if size[2] > 1 else 2 if size[1] > 1 else 1
    return str(index[0]) if n == 1 else "(" + ",".join(map(str, index[:n])) + ")"


def _row_name(row, shape):
    """Row (5,) of a 2D array is 5; row (1, 5) of a 3D one is [1, 5]."""
    return str(row[0]) if len(shape) == 2 else f"[{index_text(row)}]"


def _what(access):
    return "an atomic " + access.op if access.kind == "atomic" else f"a {access.kind}"


def _caption(race, launch, columns, rows):
    shape = launch.arrays[race.array]["shape"]
    shared = launch.arrays[race.array]["space"] == "shared"
    where = (f"shared memory of block {_dims(race.first.block, launch.grid)}" if shared
             else "global memory")
    size = (f"{shape[0]} element{'s' if shape[0] > 1 else ''}" if len(shape) == 1 else
            " × ".join(map(str, shape)))
    shown = [j for j in columns if j is not None]
    parts = []
    if len(shape) > 1 and len(rows) < shape[-2]:
        parts.append(f"rows {_row_name(rows[0], shape)}-{_row_name(rows[-1], shape)}")
    if len(shown) < shape[-1]:
        parts.append(f"{'columns' if len(shape) > 1 else 'elements'} "
                     f"{shown[0]}-{shown[-1]}")
    return (f"{race.array}[{index_text(race.index)}]: {race.array} is {size} in "
            f"{where}" + (f"; {', '.join(parts)} shown" if parts else ""))


def _window(n, centre, left, content):
    """The columns to show around column `centre` of `n` (None: an ellipsis) and the
    cell width, the most that fit WIDTH after `left` characters of labels; `content(j)`
    is the widest cell of column j."""
    for m in range(min(n, MOST_COLUMNS), 0, -1):
        start = min(max(centre - m // 2, 0), n - m)
        shown = list(range(start, start + m))
        columns = [None] * (start > 0) + shown + [None] * (start + m < n)
        widest = max(max(len(str(j)), content(j)) for j in shown)
        width = widest + (2 if widest < 5 else 1)  # narrow cells: a space each side
        if left + width * len(columns) <= WIDTH + 1 or m == 1:  # the last cell's pad
            return columns, width
    raise AssertionError("unreachable: one column always fits")


def _wrapped(line):
    return textwrap.wrap(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


# ------------------------------------------------------------ streams' race


def _where(op):
    return ("the default stream" if op.stream == 0 else "the host" if op.stream == HOST
            else f"stream {op.stream}")


def _short(op):
    return {"copy in": "in", "copy out": "out"}.get(op.what, "use" if op.stream == HOST
                                                     else "K")


def stream_race_text(trace, race):
    """The device bytes around race.span that each of the two operations reads (R) or
    writes (W), the bytes where they clash marked ^, then the two streams' queues in
    the order the host issued them, the racing pair in [ ]."""
    lo, hi = race.span
    base = max((r for r in trace.regions if r <= lo), default=lo)
    limit = min((r for r in trace.regions if r > base), default=math.inf)

    def clipped(ranges):
        return [(max(a, base), min(b, limit)) for a, b in ranges if a < limit and b > base]

    touched = [(clipped(op.reads), clipped(op.writes)) for op in (race.first, race.second)]
    start = min(a for reads, writes in touched for a, _ in reads + writes)
    end = max(b for reads, writes in touched for _, b in reads + writes)
    labels = [f"{_where(op)}: {op.what}" for op in (race.first, race.second)]
    label_width = min(max(map(len, labels)), WIDTH - len(GAP) - 16)
    cells = min(MEMORY_CELLS, WIDTH - label_width - len(GAP), end - start)
    per_cell = math.ceil((end - start) / cells)
    cells = math.ceil((end - start) / per_cell)
    spans = [(start + i * per_cell, min(start + (i + 1) * per_cell, end))
             for i in range(cells)]

    def marks(reads, writes):
        return ["W" if _hits(writes, s) else "R" if _hits(reads, s) else "·" for s in spans]

    rows = [marks(*t) for t in touched]
    clash = "".join("^" if "·" not in (a, b) and "W" in (a, b) else " "
                    for a, b in zip(*rows)).rstrip()
    name = trace.regions.get(base, "device memory")
    passed = sorted({array for launch in trace.launches for array, info in launch.arrays.items()
                     if info.get("allocation") == base})
    if passed:  # the buffer by the names the kernels gave it
        name += f" (kernel argument{'s' if len(passed) > 1 else ''} {', '.join(passed)})"
    unit = f"a cell: {per_cell} bytes" if per_cell > 1 else "a cell: 1 byte"
    pad = " " * (label_width + len(GAP))
    first, last = str(start - base), str(end - base)
    lines = _wrapped(f"{name}, bytes {first}-{last} ({unit}):")
    lines.append(pad + first + last.rjust(cells - len(first)))
    for label, row in zip(labels, rows):
        lines.append(_cut(label, label_width).ljust(label_width) + GAP + "".join(row))
    lines.append(pad + clash)
    lines += _wrapped("R read, W written; ^ both touch it, one writing, unordered")
    lines += _queues(trace, race)
    lines += _wrapped(f"missing: an order between {_where(race.first)} and "
                      f"{_where(race.second)} (one stream, an event they wait for, or a "
                      "synchronisation between them)")
    return "\n".join(lines)


def _hits(ranges, span):
    return any(a < span[1] and b > span[0] for a, b in ranges)


def _cut(label, width):
    return label if len(label) <= width else label[:width - 1] + "…"


def _queues(trace, race):
    """The two streams' operations in the order the host issued them, one row per
    stream, the racing pair in [ ]; far from the pair, … stands for the rest."""
    streams = [race.first.stream, race.second.stream]
    ops = [op for op in trace.operations if op.stream in streams]
    racing = [i for i, op in enumerate(ops) if op.seq in (race.first.seq, race.second.seq)]
    names = [_where(race.first), _where(race.second)]
    label_width = max(map(len, names)) + len(GAP)
    width = 6  # "[out]" and a space
    fits = (WIDTH + 1 - label_width) // width

    def near(d):  # the operations at most d from either of the pair
        return sorted({i for r in racing for i in range(max(r - d, 0),
                                                         min(r + d + 1, len(ops)))})

    shown = _with_gaps(near(0), len(ops))
    for d in range(1, len(ops)):
        columns = _with_gaps(near(d), len(ops))
        if len(columns) > fits:
            break
        shown = columns
    lines = _wrapped("in the order queued (in: copy to device, K: kernel, out: copy to "
                     "host" + (", use: the host reads it" if HOST in streams else "") + "):")
    for stream, name in zip(streams, names):
        row = ""
        for i in shown:
            if i is None:
                row += "…".center(width)
                continue
            op = ops[i]
            mark = _short(op) if op.stream == stream else ""
            row += (f"[{mark}]" if i in racing and mark else mark).center(width)
        lines.append((name.ljust(label_width) + row).rstrip())
    return lines


def _with_gaps(indices, n):
    """Sorted `indices` of 0..n-1 with None wherever some are left out."""
    out, last = [], -1
    for i in indices:
        if i > last + 1:
            out.append(None)
        out.append(i)
        last = i
    if last < n - 1:
        out.append(None)
    return out
