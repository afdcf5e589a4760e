"""Pictures of traces. Each function returns a matplotlib Figure drawn at the book's
column width by kernels.plots.

coverage_figure  element -> thread map, coloured by block
sectors_figure   one warp's accesses over memory, with the 32-byte sectors touched
banks_figure     one warp's accesses to a shared tile, and the words asked of each bank
timeline_figure  every access to one element, thread by thread, with barriers and races
locks_figure     who held a lock, in the order the simulator ran them
streams_figure   copies and kernels on streams, racing pairs joined
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path

from kernels import plots
from kernels.trace import analyses, hazards
from kernels.trace.model import dim3_text

GREY = (0.9, 0.9, 0.9)
RED = "#d62728"
KIND_MARKER = {"read": "o", "write": "s", "atomic": "^"}
SMALL = plots.MIN_PT  # text inside cells and on markers


def _block_colors(n):
    return plt.cm.tab10(np.arange(max(n, 1)) % 10)


def coverage_figure(coverages, titles=None, mark=None, mark_label="marked"):
    """One panel per Coverage: each element's cell is coloured by the block of the
    thread that wrote it and shows that thread's index (cuda.grid; on cells too narrow
    for two digits, one label "16–23" over consecutive threads); grey cells were
    never written; red-edged ones were written by more than one thread, or are in
    `mark` (one list of indices per panel)."""
    titles = titles or [f"{c.kernel}: {c.array}" for c in coverages]
    heights = [c.thread.reshape(-1, c.thread.shape[-1]).shape[0] for c in coverages]
    blocks = max(int(c.block.max()) + 1 for c in coverages)
    colors = _block_colors(blocks)
    handles = [Patch(color=colors[b], label=f"block {b}") for b in range(blocks)]
    handles.append(Patch(facecolor=GREY, label="never written"))
    if any(mark or []) or any(c.repeated for c in coverages):
        handles.append(Patch(facecolor="white", edgecolor=RED, linewidth=2,
                             label=mark_label if mark else "written by several threads"))
    ncol = min(len(handles), 5)
    title_lines = sum(plots.wrap(t, plots.WIDTH_IN - 1.5).count("\n") + 1 for t in titles)
    fig, axes = plots.figure(
        sum(0.3 * h + 0.45 for h in heights) + 0.2 * title_lines + 0.3
        + 0.25 * -(-len(handles) // ncol),
        len(coverages), 1, squeeze=False,
        gridspec_kw={"height_ratios": [h + 1.5 for h in heights]})
    for k, (cov, ax, title) in enumerate(zip(coverages, axes[:, 0], titles)):
        _coverage_panel(ax, cov, colors, set(mark[k]) if mark else set())
        plots.panel_title(ax, title)
    two_d = coverages[-1].thread.ndim == 2
    axes[-1, 0].set_xlabel(("column" if two_d else "element index") + " (each cell: "
                           "cuda.grid() of the thread that wrote it)")
    fig.legend(handles=handles, ncol=ncol, loc="outside lower center", frameon=False,
               handlelength=1)
    return fig


def _coverage_panel(ax, cov, colors, marked):
    owner = cov.thread.reshape(-1, cov.thread.shape[-1])
    block = cov.block.reshape(owner.shape)
    writers = cov.writers.reshape(owner.shape)
    labels = cov.labels.reshape(owner.shape)
    rows, cols = owner.shape
    narrow = cols > 24  # a cell under 0.27 in wide: room for one digit, not two
    for r in range(rows):
        edges = []
        for c in range(cols):
            written = owner[r, c] >= 0
            index = (r, c) if cov.thread.ndim == 2 else (c,)
            edges.append(RED if writers[r, c] > 1 or index in marked else "white")
            ax.add_patch(Rectangle((c, rows - 1 - r), 1, 1,
                                   facecolor=colors[block[r, c]] if written else GREY,
                                   edgecolor=edges[-1], linewidth=2 if edges[-1] == RED else 1))
        for start, end in _label_runs(labels[r], block[r], owner[r] >= 0, edges, narrow):
            written = owner[r, start] >= 0
            label = "–" if not written else str(labels[r, start]) if end == start + 1 \
                else f"{labels[r, start]}–{labels[r, end - 1]}"
            # a label over several cells sits on their colour, not on the lines between them
            ground = dict(facecolor=colors[block[r, start]], edgecolor="none", pad=1) \
                if end > start + 1 else None
            ax.text((start + end) / 2, rows - 0.5 - r, label, ha="center", va="center",
                    fontsize=SMALL, rotation=90 if narrow and end - start < len(label) else 0,
                    color="white" if written else "black", bbox=ground)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    step = 1 if cols <= 20 else 5
    ax.set_xticks(np.arange(0, cols, step) + 0.5, [str(c) for c in range(0, cols, step)])
    ax.set_yticks(np.arange(rows) + 0.5, [str(r) for r in range(rows)][::-1]
                  if cov.thread.ndim == 2 else [""] * rows)
    if cov.thread.ndim == 2:
        ax.set_ylabel("row")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _label_runs(labels, block, written, edges, narrow):
    """(start, end) column ranges that share one label in a row of a coverage panel:
    each cell alone, or where cells are too narrow for two digits, each run of cells
    whose threads are consecutive in one block ("16–23"), so no label is turned on its
    side or squeezed under a cell's width."""
    runs = []
    for c in range(len(labels)):
        if narrow and runs and written[c] and written[c - 1] and block[c] == block[c - 1] \
                and edges[c] == edges[c - 1] and str(labels[c - 1]).isdigit() \
                and str(labels[c]) == str(int(labels[c - 1]) + 1):
            runs[-1][1] = c + 1
        else:
            runs.append([c, c + 1])
    return runs


def sectors_figure(counts, titles=None, which=0):
    """One panel per SectorCount: the `which`-th warp access, its lanes over memory
    (byte offset in the allocation) and the 32-byte sectors they touch, shaded. Each
    panel spans only the bytes its access touches, so a compact access is not a speck
    on a scattered one's axis: compare the sector counts, not the widths."""
    titles = titles or [c.describe() for c in counts]
    fig, axes = plots.figure(1.5 * len(counts) + 0.5, len(counts), 1, squeeze=False)
    for count, ax, title in zip(counts, axes[:, 0], titles):
        warp = count.warp_accesses[which]
        touched = sorted({a.sector_base // analyses.SECTOR for a in warp.accesses})
        for s in touched:
            ax.add_patch(Rectangle((s * analyses.SECTOR, 0), analyses.SECTOR, 1,
                                   facecolor="#ffd8a8", edgecolor="#e8590c", linewidth=0.8))
        offsets = [a.sector_base for a in warp.accesses]
        ax.scatter(offsets, [0.5] * len(offsets), c=[a.lane for a in warp.accesses],
                   cmap="viridis", s=14, zorder=3)
        low, high = touched[0] * analyses.SECTOR, (touched[-1] + 1) * analyses.SECTOR
        pad = max(0.02 * (high - low), 2)
        ax.set_xlim(low - pad, high + pad)
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        plots.panel_title(ax, f"{title}: this warp access touches {warp.units} sectors "
                              f"(fewest possible: {warp.ideal}); bytes {low:,} to {high:,}")
    axes[-1, 0].set_xlabel("byte offset in the array (dots: lanes 0-31, dark to light; "
                           "shaded: 32-byte sectors moved)")
    return fig


def banks_figure(counts, titles=None, which=None):
    """One column of panels per BankCount: the shared tile around the cells one warp
    access touches (each cell labelled with its bank), and the words asked of each
    bank. `which` picks the warp access (default: the worst)."""
    titles = titles or [c.describe() for c in counts]
    fig, axes = plots.figure(5.6, 2, len(counts), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.2]})
    for k, (count, title) in enumerate(zip(counts, titles)):
        warp = count.worst if which is None else count.warp_accesses[which]
        _tile_panel(axes[0, k], count, warp, title, len(counts))
        per_bank = {}
        for a in warp.accesses:
            for w in analyses.words(a, count.row_length):
                per_bank.setdefault(w % analyses.BANKS, set()).add(w)
        heights = [len(per_bank.get(b, ())) for b in range(analyses.BANKS)]
        axes[1, k].bar(range(analyses.BANKS), heights,
                       color=[RED if h > 1 else "#2b8a3e" for h in heights])
        axes[1, k].set_xlabel("bank")
        axes[1, k].set_ylabel("words asked")
        axes[1, k].set_xticks(range(0, 32, 8))
        axes[1, k].set_ylim(0, max(heights) + 0.5)
        axes[1, k].yaxis.get_major_locator().set_params(integer=True)
    fig.suptitle("cells: the bank of each word of the tile; blue: touched by this warp "
                 "access", fontsize=SMALL, x=0.02, ha="left")
    return fig


def _tile_panel(ax, count, warp, title, columns):
    rows = sorted({a.index[0] for a in warp.accesses})
    cols = sorted({a.index[-1] for a in warp.accesses})
    row_length = count.row_length or count.shape[-1]
    r0, r1 = max(rows[0] - 1, 0), min(rows[-1] + 2, count.shape[0])
    c0, c1 = max(cols[0] - 2, 0), min(cols[-1] + 3, row_length)
    lanes = {}
    for a in warp.accesses:
        lanes.setdefault(a.index, []).append(a.lane)
    for r in range(r0, r1):
        for c in range(c0, c1):
            bank = (r * row_length + c) * count.itemsize // analyses.WORD % analyses.BANKS
            hit = (r, c) in lanes
            ax.add_patch(Rectangle((c, r1 - 1 - r), 1, 1, facecolor="#a5d8ff" if hit else
                                   "white", edgecolor="#adb5bd", linewidth=0.5))
            ax.text(c + 0.5, r1 - 0.5 - r, str(bank), ha="center", va="center",
                    fontsize=SMALL, color="black" if hit else "#868e96")
    ax.set_xlim(c0, c1)
    ax.set_ylim(0, r1 - r0)
    ax.set_xticks(np.arange(c0, c1) + 0.5, [str(c) for c in range(c0, c1)])
    ax.set_yticks(np.arange(r1 - r0) + 0.5, [str(r) for r in range(r0, r1)][::-1])
    ax.tick_params(length=0)
    plots.panel_title(ax, title, columns)
    ax.set_xlabel("column")
    ax.set_ylabel("row")


def timeline_figure(panels, titles=None, threads=8):
    """One panel per (trace, array, index[, kernel]): every access to array[index] in
    one launch, one row per thread (at most `threads`), in the order the simulator ran
    them; every pair of those threads that races on the element is joined in red, and
    where the kernel has barriers each access is marked with its thread's epoch."""
    rows = []
    for panel in panels:
        trace, array, index, *kernel = panel
        rows.append(_timeline_rows(trace, array, index, kernel[0] if kernel else None,
                                   threads))
    fig, axes = plots.figure(sum(0.3 * len(r[1]) + 1.25 for r in rows) + 0.55, len(panels), 1,
                             squeeze=False)
    epochs = False
    for k, (ax, row) in enumerate(zip(axes[:, 0], rows)):
        epochs |= _timeline_panel(ax, *row, title=titles[k] if titles else None)
    axes[-1, 0].set_xlabel("order in which the simulator ran them (one possible order of "
                           "many)\n● read   ■ write   ▲ atomic"
                           + ("   eN: the thread had passed N barriers" if epochs else ""))
    return fig


def _timeline_rows(trace, array, index, kernel, threads):
    launch = trace.launch(kernel)
    index = tuple(index) if isinstance(index, (tuple, list)) else (index,)
    accesses = [a for a in launch.of(array) if a.index == index]
    if not accesses:
        raise ValueError(f"no thread of {launch.kernel} touched {array}[{index}]")
    race = next((r for r in hazards.races(trace, launch.kernel)
                 if r.array == array and r.index == index), None)
    who = []  # the racing pair first, then threads in block and thread order
    by_thread = sorted(accesses, key=lambda a: (a.block[::-1], a.tid))
    for a in ([race.first, race.second] if race else []) + by_thread:
        if (a.block, a.thread) not in who:
            who.append((a.block, a.thread))
    who = who[:threads]
    shown = [a for a in accesses if (a.block, a.thread) in who]
    barriers = any(a.epoch for a in launch.accesses)
    return launch, who, shown, race, array, index, barriers


def racing_pairs(accesses):
    """For each pair of threads that race among `accesses` (to one element), the
    first of their accesses that race, in the order they ran."""
    pairs = {}
    ordered = sorted(accesses, key=lambda a: a.seq)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            key = frozenset([(a.block, a.thread), (b.block, b.thread)])
            if key not in pairs and hazards.conflict(a, b, accesses):
                pairs[key] = (a, b)
    return list(pairs.values())


def _timeline_panel(ax, launch, who, shown, race, array, index, barriers, title):
    """Draws one panel; returns whether it marked the barrier epochs."""
    order = {a.seq: x for x, a in enumerate(shown)}
    for a in shown:
        y = who.index((a.block, a.thread))
        ax.scatter(order[a.seq], y, marker=KIND_MARKER[a.kind], s=50, zorder=3,
                   color="#1c7ed6" if a.kind == "read" else "#e8590c")
        if barriers:
            ax.annotate(f"e{a.epoch}", (order[a.seq], y), textcoords="offset points",
                        xytext=(0, 6), ha="center", fontsize=SMALL, color="#495057")
    pairs = racing_pairs(shown)
    for a, b in pairs:  # arcs, so that pairs that share an access stay apart
        _arc(ax, (order[a.seq], who.index((a.block, a.thread))),
             (order[b.seq], who.index((b.block, b.thread))))
    ax.set_yticks(range(len(who)),
                  [f"block {dim3_text(b)} thread {dim3_text(t)}" for b, t in who])
    ax.set_ylim(len(who) - 0.5, -0.5 - 0.4 * barriers)
    ax.set_xlim(-0.7, len(shown) - 0.3)
    ax.set_xticks([])
    idx = ", ".join(str(i) for i in index)
    n, possible = len(who), len(who) * (len(who) - 1) // 2
    if race:
        if possible == 1:
            verdict = f"race: {race.describe()} (red line)"
        else:
            some = "every one" if len(pairs) == possible else f"{len(pairs)}"
            verdict = (f"race: {some} of the {possible} pairs of these {n} threads (red "
                       f"lines), e.g. {race.describe()}")
    else:
        verdict = ("no race: any two conflicting accesses are both atomic, or ordered by a "
                   "barrier or a lock")
    head = title or f"{launch.kernel}: accesses to {array}[{idx}]"
    plots.panel_title(ax, f"{head}\n{verdict}")
    return barriers


def _arc(ax, start, end):
    """A red arc from `start` to `end` (data coordinates: access order, row), bowed to
    one side as arc3 would bow it, by at most 0.3 of a row: it stays inside its panel
    however far apart its ends are (bowed with their distance, a long one crossed into
    the next panel)."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    along = end - start
    normal = np.array([along[1], -along[0]]) / np.hypot(*along)
    bow = min(0.125 * np.hypot(*along), 0.3)  # a quadratic curve bows half as far as
    control = (start + end) / 2 + 2 * bow * normal  # its control point lies
    ax.add_patch(PathPatch(Path([start, control, end], [Path.MOVETO, Path.CURVE3, Path.CURVE3]),
                           fill=False, edgecolor=RED, lw=1.2, alpha=0.7, zorder=2))


def locks_figure(trace, guarded, kernel=None):
    """Who held the lock, in the simulator's order: a bar per holder from take to
    release, with its accesses to the `guarded` array inside."""
    launch = trace.launch(kernel)
    events = hazards.lock_order(trace, launch.kernel)
    if not events:
        raise ValueError(f"{launch.kernel} took no lock (a cas(m, i, 0, v) that found 0)")
    held = []
    for access, change in events:
        if change == "take":
            held.append([access, None])
        else:
            held[-1][1] = access
    fig, ax = plots.figure(0.3 * len(held) + 1.9)
    rank = {a.seq: x for x, a in enumerate(sorted(launch.accesses, key=lambda a: a.seq))}
    colors = _block_colors(len(held))
    for y, (take, release) in enumerate(held):
        end = rank[release.seq] if release else len(rank)
        ax.barh(y, end - rank[take.seq], left=rank[take.seq], color=colors[y], alpha=0.35)
        inside = [a for a in launch.of(guarded) if take.seq < a.seq and
                  (release is None or a.seq < release.seq) and a.thread == take.thread and
                  a.block == take.block]
        ax.scatter([rank[a.seq] for a in inside], [y] * len(inside),
                   c=[colors[y]] * len(inside), s=30, zorder=3)
    ax.set_yticks(range(len(held)), [a.who() for a, _ in held])
    ax.invert_yaxis()
    ax.set_xlabel(f"accesses recorded so far\n(bars: lock held; dots: its reads and writes "
                  f"of {guarded})")
    found = [r for r in hazards.races(trace, launch.kernel) if r.array == guarded]
    verdict = (f"{len(found)} races on {guarded}" if found else
               f"no race on {guarded}: every access is made under the lock")
    plots.panel_title(ax, f"{launch.kernel}: one holder at a time, in the simulator's order "
                          f"(on a GPU the queue forms in arrival order)\n{verdict}")
    return fig


def streams_figure(traces, titles=None):
    """One panel per trace: its copies and kernels, one row per stream, in issue
    order; every pair that races (stream_races) is joined by a red line."""
    heights = [len({op.stream for op in t.operations}) for t in traces]
    fig, axes = plots.figure(sum(0.35 * h + 1.05 for h in heights) + 0.5, len(traces), 1,
                             squeeze=False)
    for k, (trace, ax) in enumerate(zip(traces, axes[:, 0])):
        _streams_panel(ax, trace, titles[k] if titles else None)
    axes[-1, 0].set_xlabel("operations in the order the host issued them\n(in: copy to the "
                           "device, K: kernel, out: copy back)")
    return fig


def _streams_panel(ax, trace, title):
    ops = trace.operations
    streams = sorted({op.stream for op in ops})
    x_of = {op.seq: x for x, op in enumerate(ops)}
    colors = {"copy in": "#74c0fc", "copy out": "#b2f2bb"}
    for op in ops:
        y = streams.index(op.stream)
        kind = op.what if op.what in colors else "kernel"
        ax.add_patch(Rectangle((x_of[op.seq], y - 0.35), 0.9, 0.7,
                               facecolor=colors.get(kind, "#ffd8a8"), edgecolor="#495057",
                               linewidth=0.5))
        ax.text(x_of[op.seq] + 0.45, y, {"copy in": "in", "copy out": "out"}.get(kind, "K"),
                ha="center", va="center", fontsize=SMALL)
    found = hazards.stream_races(trace)
    for race in found:  # edge to edge, under the boxes: drawn over them, it crossed labels
        rows = [streams.index(race.first.stream), streams.index(race.second.stream)]
        toward = np.sign(rows[1] - rows[0])
        ax.plot([x_of[race.first.seq] + 0.45, x_of[race.second.seq] + 0.45],
                [rows[0] + 0.35 * toward, rows[1] - 0.35 * toward],
                color=RED, linewidth=0.6, alpha=0.4, zorder=0.5)
    ax.set_xlim(-0.2, len(ops))
    ax.set_ylim(len(streams) - 0.4, -0.6)
    ax.set_xticks([])
    ax.set_yticks(range(len(streams)), [f"stream {s}" if s else "default stream"
                                        for s in streams])
    verdict = (f"{len(found)} pairs of operations on different streams use the same device "
               "memory with nothing ordering them (red)" if found else
               "no two operations that use the same device memory are left unordered")
    plots.panel_title(ax, f"{title}\n{verdict}" if title else verdict)
