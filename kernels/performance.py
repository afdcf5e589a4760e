"""The performance summary: every recorded benchmark's best version against its
fastest peer and against the device's limits (the book's performance page).

* ``summary()``: a ``Line`` per recorded benchmark, plus the benchmarks and topics
  that have no recording yet;
* ``table(lines)``: the throughput benchmarks (GB/s, TFLOP/s) as a Markdown table;
* ``behaviours(lines)``: the others (contention, overlap, launch costs: times
  without a peer to beat), listed with what they measured;
* ``figures(lines)``: achieved GB/s and TFLOP/s beside the limits, one figure per
  device, with device, driver, numba-cuda version and dates on the figure.

Recordings are read only through ``harness.recorded``, so a stale recording is
flagged here exactly as on the chapters' plots.
"""

import dataclasses
import textwrap

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from kernels import harness

METRICS = {"tflops": "TFLOP/s", "gbps": "GB/s"}  # a benchmark is summarised by the first it has
DEVICE_LIMITS = {"copy_gbps": "device copy", "h2d_gbps": "host to device",
                 "d2h_gbps": "device to host"}
TIMING_KEYS = {"name", "kind", "time_ms", "e2e_ms", "l2"}


@dataclasses.dataclass
class Line:
    """One recorded benchmark: its fastest version, fastest peer and limit."""

    result: harness.Result
    metric: str | None  # "tflops", "gbps", or None when the rows carry times only
    best: dict | None   # the fastest version's row
    peers: list         # the peers' rows that ran the best version's problem
    peer: dict | None   # the fastest of them
    limit: tuple | None  # (what, value in the metric's unit)

    @property
    def key(self):
        return self.result.key

    @property
    def unit(self):
        return METRICS[self.metric] if self.metric else "ms"

    def value(self, r):
        """A row's achievement: its metric, or its median GPU time in ms."""
        return r[self.metric] if self.metric else r["time_ms"]["median"]

    @property
    def speedup(self):
        """How many times faster the best version is than the fastest peer."""
        if self.best is None or self.peer is None:
            return None
        a, b = self.value(self.best), self.value(self.peer)
        return a / b if self.metric else b / a

    @property
    def of_limit(self):
        """The best version's achievement as a fraction of the limit."""
        if self.best is None or self.limit is None:
            return None
        return self.value(self.best) / self.limit[1]


@dataclasses.dataclass
class Summary:
    lines: list        # Line per recorded benchmark, in the course's topic order
    unrecorded: list   # benchmark keys without a recording
    no_benchmarks: list  # topics that have no benchmark module yet


def _fastest(rows, metric):
    if metric:
        rows = [r for r in rows if metric in r]
        return max(rows, key=lambda r: r[metric], default=None)
    rows = [r for r in rows if "time_ms" in r]
    return min(rows, key=lambda r: r["time_ms"]["median"], default=None)


def settings(r):
    """A row's integer and short text fields: its problem and launch settings (n=4096,
    blocks=528). Float fields are measurements, not settings."""
    return {k: v for k, v in r.items()
            if k not in TIMING_KEYS and k not in METRICS and isinstance(v, (int, str))
            and not isinstance(v, bool) and len(str(v)) <= 24}


def comparable(rows, best):
    """The rows that ran `best`'s problem: equal in every setting both have (a peer
    measured at n=4096 for a version at n=4096); all of them if none did."""
    mine = settings(best) if best is not None else {}
    same = [r for r in rows if all(v == mine[k] for k, v in settings(r).items() if k in mine)]
    return same or rows


def _limit(result, metric, best):
    # What bounds a version: the benchmark's own "limit" rows and any cuBLAS peer
    # (the vendor's kernel is the practical ceiling); failing those, for GB/s, the
    # measured host link for a transfer and the device's copy bandwidth otherwise.
    candidates = comparable(result.rows("limit") + [r for r in result.rows("peer")
                                                    if "cublas" in r["name"].lower()], best)
    found = _fastest(candidates, metric) if metric else None
    if found is not None:
        return found["name"], found[metric]
    if metric == "gbps":
        # A transfer (its best row names the direction) is bounded by the host link.
        said = f"{best['name']} {best.get('direction', '')}".lower()
        for words, key in (("host to device", "h2d_gbps"), ("device to host", "d2h_gbps")):
            if words in said:
                return f"{DEVICE_LIMITS[key]} (measured)", result.limits[key]
        return "device copy (measured)", result.limits["copy_gbps"]
    return None


def line(result):
    """Summarise one benchmark Result."""
    kernels = result.rows("kernel")
    metric = next((m for m in METRICS if any(m in r for r in kernels)), None)
    best = _fastest(kernels, metric)
    peers = comparable(result.rows("peer"), best)
    return Line(result, metric, best, peers, _fastest(peers, metric), _limit(result, metric, best))


def summary():
    """Every registered benchmark's recording, summarised; what is not recorded yet."""
    benchmarks = harness.load_benchmarks()
    order = {t: i for i, t in enumerate(harness.TOPICS)}
    lines, unrecorded = [], []
    for key in sorted(benchmarks, key=lambda k: (order[k.split(".")[0]], k)):
        try:
            lines.append(line(harness.recorded(key)))
        except LookupError:
            unrecorded.append(key)
    no_benchmarks = [t for t in harness.TOPICS
                     if not any(k.startswith(t + ".") for k in benchmarks)]
    return Summary(lines, unrecorded, no_benchmarks)


def label(r):
    """A row's name with the settings it does not already say (e.g. blocks=528)."""
    extra = [f"{k}={v}" for k, v in settings(r).items() if str(v) not in r["name"]]
    return r["name"] + (f" ({', '.join(extra)})" if extra else "")


def _fmt(value, unit):
    return f"{value:,.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def table(lines):
    """The throughput lines as a Markdown table, then where and when they were recorded."""
    lines = [ln for ln in lines if ln.metric is not None]
    if not lines:
        return "*No throughput benchmark recorded yet.*"
    out = ["| Benchmark | Best version | Achieved | Fastest peer | Speed-up | Of its limit |",
           "| --- | --- | --- | --- | --- | --- |"]
    for ln in lines:
        name = f"`{ln.key}`" + (" **STALE**" if ln.result.stale else "")
        best = ("no version row", "-") if ln.best is None else (
            label(ln.best), _fmt(ln.value(ln.best), ln.unit))
        peer = "-" if ln.peer is None else f"{label(ln.peer)}: {_fmt(ln.value(ln.peer), ln.unit)}"
        speedup = "-" if ln.speedup is None else f"{ln.speedup:,.2f}x"
        of_limit = "-" if ln.of_limit is None else f"{100 * ln.of_limit:.0f}% of {ln.limit[0]}"
        out.append(f"| {name} | {best[0]} | {best[1]} | {peer} | {speedup} | {of_limit} |")
    out.append("")
    for dev_lines in _by_device(lines).values():
        out.append(f"*{caption(dev_lines)}.*".replace("\n", "; "))
    return "\n".join(out)


def behaviours(lines):
    """The lines without GB/s or TFLOP/s, as a Markdown list of what each measured."""
    lines = [ln for ln in lines if ln.metric is None]
    return "\n".join(
        f"* `{ln.key}`{' **STALE**' if ln.result.stale else ''}: "
        f"{ln.result.entry['description']} ({ln.result.env['device']['name']}, "
        f"{ln.result.entry['date'][:10]})" for ln in lines) or "*None recorded yet.*"


def _by_device(lines):
    found = {}
    for ln in lines:
        found.setdefault(ln.result.env["device"]["name"], []).append(ln)
    return found


def caption(lines):
    """Device, driver, numba-cuda version and recording dates of `lines` (one device)."""
    env = lines[0].result.env
    dates = sorted(ln.result.entry["date"][:10] for ln in lines)
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    text = (f"{env['device']['name']}, driver {env.get('driver', '?')}, "
            f"numba-cuda {env['numba_cuda']}, recorded {when}")
    stale = [ln.key for ln in lines if ln.result.stale]
    if stale:
        text += "\n" + textwrap.fill(
            f"STALE (kernels changed since recorded): {', '.join(stale)}", 150)
    return text


def _own_limit(ln):
    """Whether the line's limit is its benchmark's own (a device limit is drawn as a line)."""
    return ln.limit is not None and not ln.limit[0].endswith("(measured)")


def _peers_by_priority(ln, metric):
    # the fastest peer first, then the others from the fastest
    return sorted((r for r in ln.peers if metric in r),
                  key=lambda r: (r is not ln.peer, -ln.value(r)))


def _name_peers(ax, ln, yy, metric):
    """Write peers' names under their markers, on one of two levels, none over another;
    a name that fits on neither level is left out (its marker stays)."""
    low, high = ax.get_xlim()
    # decades of the axis per character of a 7 pt name (the axes are about 5.5 in wide)
    per_char = np.log10(high / low) / 5.5 * 4.2 / 72
    placed = []  # (log10 x, level, characters)
    for r in _peers_by_priority(ln, metric):
        x, n = np.log10(ln.value(r)), len(r["name"])
        level = next((lv for lv in (0, 1) if all(
            abs(x - px) > per_char * (n + pn) / 2 + 0.05 for px, pl, pn in placed if pl == lv)),
            None)
        if level is not None:
            placed.append((x, level, n))
            ax.annotate(r["name"], (10 ** x, yy), xytext=(0, -13 - 10 * level),
                        textcoords="offset points", ha="center", fontsize=7,
                        color="tab:orange" if r is ln.peer else "dimgray")


def _panel(ax, lines, metric, limits):
    # Log scale: a CPU peer and a GPU limit differ by 100x. Markers, not bars, since a
    # bar on a log axis has no meaningful start.
    y = np.arange(len(lines))[::-1]
    for yy, ln in zip(y, lines):
        for r in _peers_by_priority(ln, metric):
            ax.plot(ln.value(r), yy, "D", ms=7, mec="tab:orange",
                    mfc="tab:orange" if r is ln.peer else "none")
        ax.plot(ln.value(ln.best), yy, "o", color="tab:blue", ms=9)
        ax.annotate(ln.best["name"], (ln.value(ln.best), yy), xytext=(0, 7),
                    textcoords="offset points", ha="center", fontsize=7, color="tab:blue")
        if _own_limit(ln):
            ax.plot(ln.limit[1], yy, "k|", ms=20, mew=2)
    handles = [plt.Line2D([], [], ls="none", marker="o", color="tab:blue", label="best version"),
               plt.Line2D([], [], ls="none", marker="D", color="tab:orange", label="fastest peer"),
               plt.Line2D([], [], ls="none", marker="D", mfc="none", mec="tab:orange",
                          label="other peers")]
    if any(_own_limit(ln) for ln in lines):
        handles.append(plt.Line2D([], [], ls="none", marker="|", color="k", ms=14, mew=2,
                                  label="its limit (limit row or cuBLAS)"))
    if metric == "gbps":
        for (key, name), style in zip(DEVICE_LIMITS.items(), ("-", "--", ":")):
            handles.append(ax.axvline(limits[key], color="black", linestyle=style, linewidth=1,
                                      label=f"{name}: {limits[key]:,.0f} GB/s (measured)"))
    ax.set_xscale("log")
    ax.margins(x=0.15)
    low, high = ax.get_xlim()
    # 1-2-5 ticks over a few decades; powers of ten only over many
    subs = (1, 2, 5) if np.log10(high / low) < 4.5 else (1,)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    for yy, ln in zip(y, lines):
        _name_peers(ax, ln, yy, metric)
    ax.set_ylim(-0.7, len(lines) - 0.3)
    ax.set_yticks(y, [ln.key + (" (STALE)" if ln.result.stale else "") for ln in lines])
    for tick, ln in zip(ax.get_yticklabels(), lines):
        if ln.result.stale:
            tick.set_color("tab:red")
    ax.set_xlabel(f"achieved {METRICS[metric]} (log scale)")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


def figures(lines):
    """One figure per device: achieved GB/s and TFLOP/s of the best version and the
    fastest peer of each benchmark, against the device's measured limits."""
    figs = []
    plotted = [ln for ln in lines if ln.metric is not None and ln.best is not None]
    for device, dev_lines in _by_device(plotted).items():
        panels = [(m, [ln for ln in dev_lines if ln.metric == m]) for m in METRICS]
        panels = [(m, ls) for m, ls in panels if ls]
        heights = [len(ls) + 1.5 for _, ls in panels]
        fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                                 figsize=(11, 1.5 + 0.6 * sum(heights)),
                                 gridspec_kw={"height_ratios": heights})
        for ax, (metric, ls) in zip(axes[:, 0], panels):
            _panel(ax, ls, metric, ls[0].result.limits)
        fig.suptitle(f"Best version vs fastest peer and the limits on the {device}")
        text = caption(dev_lines)
        fig.text(0.01, 0.005, text, fontsize=8, va="bottom")
        # room at the bottom for the caption's lines, about 0.2 inch each
        bottom = (0.25 + 0.2 * text.count("\n")) / fig.get_figheight()
        fig.tight_layout(rect=(0, bottom, 1, 1))
        figs.append(fig)
    return figs
