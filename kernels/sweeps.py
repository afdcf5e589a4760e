"""How cost grows with size: the size sweeps of the performance page.

* ``SWEEPS``: the recorded sweeps (benchmark key -> how to read it);
* ``load(key)``: a ``Sweep`` (its series of times by size, its peers and its floor at
  each size), or None where the benchmark has no recording yet;
* ``facts(sweep)``: the numbers the page's prose is glued from (fixed cost, where the
  L2 helps, the asymptote, the peer);
* ``figure(sweep)``: time against size, log-log, with peers and floor, drawn for the
  book's column (kernels.plots).

The floor at each size is built like the performance summary's: the bytes that must
move over the measured device copy bandwidth (and, for SGEMM, the float32 operations
over the device's peak), plus the measured time of the smallest kernel; never a
row's own time or a peer's.
"""

import dataclasses
import itertools

import matplotlib.ticker
import numpy as np

from kernels import hardware, harness, plots

COLD = "flushed before each repeat"


@dataclasses.dataclass(frozen=True)
class Spec:
    size_field: str       # the row field that holds the problem size
    unit: str             # what the size counts, for the axis
    bytes_per: float      # bytes that must move per unit of size (None: SGEMM's 3 n^2 x 4)
    what: str             # the problem, in words


SWEEPS = {
    "histogram.size_sweep": Spec("bytes", "bytes of text", 1.0, "histogram of the text"),
    "reduction.size_sweep": Spec("n", "int32 elements", 4.0, "sum of int32"),
    "matmul.sweep": Spec("n", "n (n x n float32 matrices)", None, "SGEMM"),
}


@dataclasses.dataclass
class Sweep:
    key: str
    spec: Spec
    result: harness.Result
    series: dict   # label -> (kind, sizes, ms): kind "kernel" (cold), "warm", "peer", "limit"
    floor: tuple   # (sizes, ms)

    @property
    def sizes(self):
        return self.floor[0]


def _floor_ms(spec, result, size):
    limits = result.limits
    if spec.bytes_per is not None:
        return spec.bytes_per * size / limits["copy_gbps"] / 1e6 + limits["kernel_ms"]
    dev = result.env["device"]
    flops = 2.0 * size ** 3
    if dev.get("clock_khz"):
        rate = hardware.fp32_peak_tflops(dev["sm_count"], dev["compute_capability"],
                                         dev["clock_khz"])
    else:
        rate = limits["fp32_tflops"]
    bytes_ = 3 * 4.0 * size ** 2  # a and b read once, c written once
    return max(flops / rate / 1e9, bytes_ / limits["copy_gbps"] / 1e6) + limits["kernel_ms"]


def load(key):
    """The recorded sweep `key` as a Sweep, or None if it has no recording."""
    spec = SWEEPS[key]
    try:
        result = harness.recorded(key)
    except (LookupError, KeyError):
        return None
    rows = [r for r in result.entry["rows"] if "time_ms" in r and spec.size_field in r]
    # a version timed both ways gets a second, warm series; one timed only warm (SGEMM,
    # whose time is arithmetic) keeps its one series
    cold_names = {r["name"] for r in rows if r.get("l2") == COLD}
    series = {}
    for r in rows:
        kind = r["kind"]
        label = r["name"]
        if kind == "kernel" and r.get("l2", COLD) != COLD and r["name"] in cold_names:
            kind, label = "warm", f"{r['name']}, warm L2"
        points = series.setdefault(label, (kind, {}))[1]
        points[r[spec.size_field]] = r["time_ms"]["median"]
    series = {label: (kind, np.array(sorted(p)), np.array([p[s] for s in sorted(p)]))
              for label, (kind, p) in series.items()}
    sizes = np.array(sorted({s for _, xs, _ in series.values() for s in xs}))
    floor = (sizes, np.array([_floor_ms(spec, result, s) for s in sizes]))
    return Sweep(key, spec, result, series, floor)


def best_series(sweep):
    """The label of the cold kernel series that is fastest at the largest size."""
    cold = {k: v for k, v in sweep.series.items() if v[0] == "kernel"}
    return min(cold, key=lambda k: cold[k][2][-1])


def _at(series, size):
    _, xs, ms = series
    found = np.flatnonzero(xs == size)
    return float(ms[found[0]]) if found.size else None


def facts(sweep):
    """The numbers the page says about `sweep`, from its recording."""
    best = best_series(sweep)
    _, xs, ms = sweep.series[best]
    floor = dict(zip(*sweep.floor))
    f = {"best": best, "smallest": int(xs[0]), "largest": int(xs[-1]),
         "small_us": ms[0] * 1e3, "small_floor_us": floor[xs[0]] * 1e3,
         "large_ms": ms[-1], "large_over_floor": ms[-1] / floor[xs[-1]],
         "kernel_us": sweep.result.limits["kernel_ms"] * 1e3}
    # "nearly flat": within 25% of the smallest size's time, the fixed cost is most of it
    f["flat_until"] = int(max(x for x, t in zip(xs, ms) if t < 1.25 * ms[0]))
    if sweep.spec.bytes_per is not None:
        f["large_gbps"] = sweep.spec.bytes_per * xs[-1] / ms[-1] / 1e6
        f["large_of_copy"] = f["large_gbps"] / sweep.result.limits["copy_gbps"]
    warm = sweep.series.get(f"{best}, warm L2")
    if warm is not None:
        gains = [(t / _at(warm, x), int(x)) for x, t in zip(xs, ms) if _at(warm, x)]
        f["l2_gain"], f["l2_size"] = max(gains)
    peers = {k: v for k, v in sweep.series.items() if v[0] == "peer"}
    if peers:
        fastest = min(peers, key=lambda k: peers[k][2][-1])
        f["peer"] = fastest
        f["peer_small_x"] = _at(peers[fastest], xs[0]) / ms[0] if _at(peers[fastest], xs[0]) else None
        f["peer_large_x"] = _at(peers[fastest], xs[-1]) / ms[-1] if _at(peers[fastest], xs[-1]) else None
    return f


STYLE = {"kernel": dict(color="tab:blue", marker="o", ls="-"),
         "warm": dict(color="tab:blue", marker="o", ls=":", mfc="none"),
         "peer": dict(color="tab:orange", marker="D", ls="-"),
         "limit": dict(color="tab:green", marker="s", ls="--", mfc="none")}
# each peer after the first its own colour and marker: two peers drawn alike
# (cupy.bincount and torch.bincount) could not be told apart by the legend
PEERS = [dict(color="tab:orange", marker="D"), dict(color="tab:purple", marker="^"),
         dict(color="tab:brown", marker="v"), dict(color="tab:pink", marker="P")]


def figure(sweep):
    """Time against size (log-log): the best version (cold, and warm L2 where timed so)
    in colour, the other versions thin and grey, the peers and the floor; drawn for the
    book's column (kernels.plots)."""
    fig, ax = plots.figure(5.2)
    best = best_series(sweep)
    shown = (best, f"{best}, warm L2")
    others = [k for k, v in sweep.series.items()
              if v[0] in ("kernel", "warm") and k not in shown]
    # the other versions, cold and warm, thin and grey under one legend entry: lines
    # that close together cannot be told apart by colour, and the page compares the best
    versions = len({k.removesuffix(", warm L2") for k in others})
    warm = any(sweep.series[k][0] == "warm" for k in others)
    for label in others:
        _, xs, ms = sweep.series[label]
        ax.plot(xs, ms * 1e3, color="0.65", lw=1, zorder=1, label=None if label != others[0]
                else f"{versions} other version{'s' if versions > 1 else ''}"
                + (", cold and warm L2" if warm else ""))
    peers = itertools.cycle(PEERS)
    for label, (kind, xs, ms) in sweep.series.items():
        if label not in others:
            style = dict(STYLE[kind], **next(peers)) if kind == "peer" else STYLE[kind]
            ax.plot(xs, ms * 1e3, ms=4, lw=1.5, label=label, **style)
    xs, fl = sweep.floor
    ax.plot(xs, fl * 1e3, color="black", ls="--", lw=1.5, label="physical floor")
    l2 = sweep.result.env["device"].get("l2_bytes")
    if l2 and sweep.spec.bytes_per is not None:
        ax.axvline(l2 / sweep.spec.bytes_per, color="gray", lw=1, alpha=0.6)
        ax.annotate(" L2 size", (l2 / sweep.spec.bytes_per, ax.get_ylim()[1]), va="top",
                    color="gray")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs, [size_label(sweep.spec, x) for x in xs], rotation=45 if len(xs) > 7 else 0)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel(f"problem size ({sweep.spec.unit}, log scale)")
    ax.set_ylabel("GPU time (\u00b5s, log scale)")
    ax.grid(which="major", alpha=0.3)
    plots.title(ax, f"{sweep.spec.what}: time against size", sweep.result)
    # the legend under the axes, where it covers no line
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2)
    return fig


def size_label(spec, x):
    """A size as the axis and the prose write it: 64 KB, 3e6, 4,096."""
    if spec.size_field == "bytes":
        for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
            if x >= 1 << shift:
                return f"{x / (1 << shift):g} {unit}"
        return f"{x} B"
    if spec.bytes_per is None:
        return f"{x:,}"
    exponent = int(np.floor(np.log10(x)))
    mantissa = x / 10 ** exponent
    return f"1e{exponent}" if mantissa == 1 else f"{mantissa:g}e{exponent}"
