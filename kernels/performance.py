"""The performance summary: every recorded benchmark's best version against its
fastest peer on the same problem and against its physical floor (the book's
performance page).

* ``summary()``: a ``Line`` per recorded benchmark, plus the benchmarks and topics
  that have no recording yet;
* ``table(lines)``: the throughput benchmarks (GB/s, TFLOP/s) as a Markdown table:
  times, the speed-up over the fastest peer (a ratio of times for the same problem),
  the physical floor and how far the best version is from it;
* ``floors(lines)``: one sentence per line on how its floor was computed;
* ``trailing(lines)``: the lines whose best version trails its fastest peer, by how much;
* ``host_gaps(lines)``: the peer whose CUDA-event time most overstates its device-busy
  time (the case for comparing busy times);
* ``behaviours(lines)``: the others (contention, overlap, launch costs: times
  without a peer to beat), listed with what they measured;
* ``figures(lines)``: the times of best version, peers and floor, one figure per
  device, with device, driver, numba-cuda version and dates on the figure.

Recordings are read only through ``harness.recorded``, so a stale recording is
flagged here exactly as on the chapters' plots.
"""

import dataclasses
import textwrap

import matplotlib.pyplot as plt
import matplotlib.ticker
import matplotlib.transforms
import numpy as np

from kernels import hardware, harness, mutex, plots
from kernels.compare import BUSY, alike, e2e_ratio, fair, fastest, phrase, speedup, verdict

METRICS = {"tflops": "TFLOP/s", "gbps": "GB/s"}  # a benchmark is summarised by the first it has
DEVICE_LIMITS = {"copy_gbps": "device copy", "h2d_gbps": "host to device",
                 "d2h_gbps": "device to host"}
TIMING_KEYS = {"name", "kind", "time_ms", "e2e_ms", "l2"}
PART = "part"  # a peer row with this field solves only part of the problem (cupy.min alone)


@dataclasses.dataclass
class Floor:
    """The least time the best version's problem can take, from measured parts."""

    ms: float
    how: str  # one sentence: the parts and how they add up


@dataclasses.dataclass
class Line:
    """One recorded benchmark: its fastest version, fastest peer and floor."""

    result: harness.Result
    metric: str | None  # "tflops", "gbps", or None when the rows carry times only
    best: dict | None   # the fastest version's row
    peers: list         # the peers' rows that solved the best version's whole problem
    peer: dict | None   # the fastest of them, by time
    floor: Floor | None

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
        """How many times faster the best version is than the fastest peer: the peer's
        time over the version's, both for the same problem and measured alike (fair),
        never a ratio of GB/s, which would credit a peer for bytes it need not have
        moved."""
        if self.best is None or self.peer is None:
            return None
        return speedup(self.best, self.peer)

    @property
    def measured(self):
        """How the speed-up's two times were measured (see fair)."""
        return None if self.best is None or self.peer is None else fair(self.best, self.peer)[2]

    @property
    def e2e_speedup(self):
        """The same ratio end to end: each call as a Python caller waits for it."""
        if self.best is None or self.peer is None:
            return None
        return e2e_ratio(self.best, self.peer)

    @property
    def over_floor(self):
        """The best version's time as a multiple of its floor (1.0: at the floor)."""
        if self.best is None or self.floor is None:
            return None
        return ms(self.best) / self.floor.ms


@dataclasses.dataclass
class Summary:
    lines: list        # Line per recorded benchmark, in the course's topic order
    unrecorded: list   # benchmark keys without a recording
    no_benchmarks: list  # topics that have no benchmark module yet


def ms(r):
    """A row's median GPU time in ms."""
    return r["time_ms"]["median"]


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
    measured at n=4096 for a version at n=4096). None where every row differs: a peer
    with its data on the host is no peer of a version with its data on the device."""
    mine = settings(best) if best is not None else {}
    return [r for r in rows if all(v == mine[k] for k, v in settings(r).items() if k in mine)]


def _bandwidth(result, best):
    """(what, GB/s): the measured bandwidth that bounds the best version's bytes: the
    host link for a transfer (its row names the direction), else the device copy."""
    said = f"{best['name']} {best.get('direction', '')}".lower()
    for words, key in (("host to device", "h2d_gbps"), ("device to host", "d2h_gbps")):
        if words in said:
            return f"measured {DEVICE_LIMITS[key]} bandwidth", result.limits[key]
    return "measured device copy bandwidth", result.limits["copy_gbps"]


def _fp32_rate(result):
    """(what, TFLOP/s): the device's float32 peak, SMs x lanes x 2 x clock, where the
    recording names its clock; else (older recordings) the measured FMA rate."""
    dev = result.env["device"]
    if dev.get("clock_khz"):
        lanes = hardware.fp32_lanes_per_sm(dev["compute_capability"])
        peak = hardware.fp32_peak_tflops(dev["sm_count"], dev["compute_capability"],
                                         dev["clock_khz"])
        return (f"the float32 peak, {dev['sm_count']} SMs \u00d7 {lanes} lanes \u00d7 2 "
                f"\u00d7 {dev['clock_khz'] / 1e6:.2f} GHz"), peak
    return "measured float32 FMA rate", result.limits["fp32_tflops"]


def _fmt_ms(value):
    return f"{value * 1e3:,.3g} \u00b5s" if value < 1 else f"{value:,.3g} ms"


def _floor(result, best):
    """The physical floor of the best version's problem, from measured parts: the bytes
    it must move over the measured bandwidth, or its float32 operations over the
    device's float32 peak (SMs x lanes x 2 x clock), whichever is longer, plus the
    measured time of the smallest kernel. The bytes and operations are those its GB/s
    and TFLOP/s count (each input read once, each output written once). Never a row's
    own time or a peer's: a run faster than its floor shows as one (a test reads the
    recordings for it). A benchmark's own limit row with "floor_ms" (built from its own
    measured parts, e.g. only the bytes that must cross DRAM) wins."""
    if best is None or "time_ms" not in best:
        return None
    own = [r for r in comparable(result.rows("limit"), best) if "floor_ms" in r]
    if own:
        r = min(own, key=lambda r: r["floor_ms"])
        return Floor(r["floor_ms"], f"the benchmark's own floor, \u201c{r['name']}\u201d: "
                                    f"{_fmt_ms(r['floor_ms'])}.")
    limits = result.limits
    if "kernel_ms" not in limits or not any(m in best for m in METRICS):
        return None
    terms = []  # (ms, words)
    if "gbps" in best:
        # a row whose GB/s counts traffic that stays in L2 says what must cross DRAM
        nbytes = best.get("dram_bytes", best["gbps"] * ms(best) * 1e6)
        moved = "that must cross DRAM" if "dram_bytes" in best else "read or written"
        what, gbps = _bandwidth(result, best)
        t = nbytes / gbps / 1e6
        terms.append((t, f"{nbytes / 1e6:,.3g} MB {moved} \u00f7 {gbps:,.0f} GB/s "
                         f"({what}) = {_fmt_ms(t)}"))
    if "tflops" in best and ("fp32_tflops" in limits or result.env["device"].get("clock_khz")):
        flops = best["tflops"] * ms(best) * 1e9
        what, rate = _fp32_rate(result)
        t = flops / rate / 1e9
        terms.append((t, f"{flops / 1e9:,.4g} GFLOP \u00f7 {rate:,.1f} TFLOP/s ({what}) "
                         f"= {_fmt_ms(t)}"))
    if not terms:
        return None
    t, words = max(terms)
    if "direction" in best:  # a copy between host and device launches no kernel
        return Floor(t, f"{words} (a copy: no kernel launch to add).")
    total = t + limits["kernel_ms"]
    return Floor(total, f"{words}, plus {_fmt_ms(limits['kernel_ms'])} for the smallest "
                        f"kernel (measured): {_fmt_ms(total)}.")


def line(result):
    """Summarise one benchmark Result."""
    # a version the host completes solves part of the problem: never the best version
    kernels = [r for r in result.rows("kernel") if r["name"] not in mutex.HOST_FINISHED]
    metric = next((m for m in METRICS if any(m in r for r in kernels)), None)
    best = _fastest(kernels, metric)
    peers = [r for r in comparable(result.rows("peer"), best)
             if PART not in r and "time_ms" in r]
    # the fastest peer by the fair ratio (kernels.compare.alike)
    peer = fastest(best, peers) if best else None
    return Line(result, metric, best, peers, peer, _floor(result, best))


def summary():
    """Every registered benchmark's recording, summarised (but experiments on one
    version: Benchmark.summarised); what is not recorded yet."""
    benchmarks = harness.load_benchmarks()
    order = {t: i for i, t in enumerate(harness.recording.TOPICS)}
    lines, unrecorded = [], []
    for key in sorted(benchmarks, key=lambda k: (order[k.split(".")[0]], k)):
        if not benchmarks[key].summarised:  # an experiment on one version
            continue
        try:
            lines.append(line(harness.recorded(key)))
        except LookupError:
            unrecorded.append(key)
    no_benchmarks = [t for t in harness.recording.TOPICS
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
    # Six short columns, the benchmark over its best version in one: the table fits the
    # content column (about 690 px) with its key column, time over floor, in view.
    out = ["| Benchmark, best version | Its time | Time \u00f7 floor | Physical floor "
           "| Fastest peer, same problem | Speed-up |",
           "| --- | --- | --- | --- | --- | --- |"]
    for ln in lines:
        name = f"`{ln.key}`" + (" **STALE**" if ln.result.stale else "")
        if ln.best is None:
            best = ("no version row", "-")
        else:
            best = (label(ln.best), f"{_fmt_ms(ms(ln.best))} ({_fmt(ln.value(ln.best), ln.unit)})")
        if ln.peer is None:
            peer = speedup = "-"
        else:
            mine, theirs, how = fair(ln.best, ln.peer)
            peer = f"{label(ln.peer)}: {_fmt_ms(theirs)}"
            speedup = f"{ln.speedup:,.2f}x"
            if how == BUSY:  # the version's own device-busy time beside it
                peer += f" (ours {_fmt_ms(mine)}, device-busy)"
            if ln.e2e_speedup is not None:
                speedup += f"<br>{ln.e2e_speedup:,.2f}x end to end"
        floor = "-" if ln.floor is None else _fmt_ms(ln.floor.ms)
        over = "-" if ln.over_floor is None else f"{ln.over_floor:,.2f}x"
        out.append(f"| {name}<br>{best[0]} | {best[1]} | {over} | {floor} | {peer} "
                   f"| {speedup} |")
    out.append("")
    for dev_lines in _by_device(lines).values():
        out.append(f"*{caption(dev_lines)}.*".replace("\n", "; "))
    return "\n".join(out)


def floors(lines):
    """How each throughput line's floor was computed, one sentence each (Markdown list)."""
    lines = [ln for ln in lines if ln.metric is not None]
    return "\n".join(
        f"* `{ln.key}`: " + (ln.floor.how if ln.floor else
                            "no floor: its recording has no measured smallest kernel "
                            "(re-record it) or its rows count neither bytes nor operations.")
        for ln in lines) or "*Nothing yet.*"


def trailing(lines):
    """The throughput lines whose best version is slower than its fastest peer, measured
    alike (the verdict, beyond the rows' noise), one Markdown item each; a sentence
    saying none does where none is."""
    found = []
    for ln in lines:
        if ln.metric is None or ln.best is None or ln.peer is None:
            continue
        mine, theirs, how = alike(ln.best, ln.peer)
        if verdict(mine, theirs) == "slower":
            found.append(f"* `{ln.key}`: {ln.best['name']} is "
                         f"{phrase(mine, theirs, than=ln.peer['name'])} "
                         f"({'device-busy' if how == BUSY else 'CUDA-event'} times)")
    return "\n".join(found) or "*No best version trails its fastest peer.*"


def host_gaps(lines):
    """(line, peer row, events ms, busy ms) of the GPU peer whose CUDA-event time most
    exceeds its device-busy time, or None where no peer has both."""
    found = [(r["time_ms"]["median"] / r["busy_ms"]["median"], ln, r)
             for ln in lines for r in ln.peers if "busy_ms" in r]
    if not found:
        return None
    _, ln, r = max(found, key=lambda f: f[0])
    return ln, r, r["time_ms"]["median"], r["busy_ms"]["median"]


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
            f"STALE (kernels changed since recorded): {', '.join(stale)}", 80)
    return text


def _peers_by_priority(ln):
    # the fastest peer first, then the others from the fastest
    return sorted((r for r in ln.peers if "time_ms" in r), key=lambda r: (r is not ln.peer, ms(r)))


def _who(ln):
    """The row's line of words: its best version and its fastest peer, by how much."""
    text = f"best: {ln.best['name']}"
    if ln.peer is not None:
        text += (f"; fastest peer: {ln.peer['name']} takes {ln.speedup:,.1f}x as long"
                 + (" (device-busy)" if ln.measured == BUSY else ""))
    return text


def _panel(ax, lines):
    # Times, not GB/s: every marker of a row is the time for the same problem, so
    # further right is slower whatever bytes each one counts. Log scale: a CPU peer
    # and the GPU can differ by 100x. Markers, not bars: a bar on a log axis has no start.
    # Names go on a line of their own under each row's markers, where none can cover
    # another or a marker.
    for yy, ln in enumerate(lines):
        for r in _peers_by_priority(ln):
            ax.plot(ms(r), yy, "D", ms=7, mec="tab:orange",
                    mfc="tab:orange" if r is ln.peer else "none")
        if ln.floor is not None:
            ax.plot(ln.floor.ms, yy, "k|", ms=11, mew=2)
        ax.plot(ms(ln.best), yy, "o", color="tab:blue", ms=8)
        # from the figure's left edge: the whole width, under the row's name
        ax.text(0.01, yy + 0.42, textwrap.shorten(_who(ln), 85, placeholder=" ..."),
                transform=matplotlib.transforms.blended_transform_factory(
                    ax.figure.transFigure, ax.transData),
                va="center", color="dimgray", in_layout=False,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    handles = [plt.Line2D([], [], ls="none", marker="o", color="tab:blue", label="best version"),
               plt.Line2D([], [], ls="none", marker="D", color="tab:orange", label="fastest peer"),
               plt.Line2D([], [], ls="none", marker="D", mfc="none", mec="tab:orange",
                          label="other peers"),
               plt.Line2D([], [], ls="none", marker="|", color="k", ms=11, mew=2,
                          label="physical floor (measured parts)")]
    ax.set_xscale("log")
    ax.margins(x=0.08)
    low, high = ax.get_xlim()
    # 1-2-5 ticks over a few decades; powers of ten only over many
    subs = (1, 2, 5) if np.log10(high / low) < 3.5 else (1,)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylim(len(lines) - 0.35, -0.5)
    ax.set_yticks(range(len(lines)),
                  [ln.key + (" (STALE)" if ln.result.stale else "") for ln in lines])
    for tick, ln in zip(ax.get_yticklabels(), lines):
        if ln.result.stale:
            tick.set_color("tab:red")
    ax.set_xlabel("time of one run of the problem (ms, log scale; left is faster):\n"
                  "GPU kernels, CPU peers and host transfers alike")
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.figure.legend(handles=handles, loc="outside lower center", ncol=2)


def figures(lines):
    """One figure per device: the time of the best version, of the peers on the same
    problem and the physical floor of each throughput benchmark."""
    figs = []
    plotted = [ln for ln in lines if ln.metric is not None and ln.best is not None]
    for device, dev_lines in _by_device(plotted).items():
        text = "\n".join(textwrap.fill(line, 80) for line in caption(dev_lines).split("\n"))
        fig, ax = plots.figure(0.55 * len(dev_lines) + 1.9 + 0.17 * text.count("\n"))
        _panel(ax, dev_lines)
        fig.suptitle(f"Best version, peers and physical floor of each benchmark\n{text}",
                     x=0.01, ha="left", fontsize=matplotlib.rcParams["axes.titlesize"])
        figs.append(fig)
    return figs
