"""The matmul chapter's bounds and launch arithmetic for one GPU, from its properties.

``bounds(device, n)`` takes a device as ``kernels.device()`` describes it (or as a
recording stores it: name, compute capability, SM count, clock) and returns a
``Bounds``: the float32 peak, the shared-memory bounds of the tiled kernels, and what
the launchers of ``kernels.matmul_fast`` do with an n x n product on that GPU (tiles,
blocks per SM, splits of the sum over k, one block per SM). ``phrases(bounds)`` gives
the same as the short texts the chapter glues into its prose, so a reader on a T4
reads the T4's numbers. Nothing here is measured.

The shared-memory model: an SM's shared memory serves one wavefront (one pass through
its 32 banks) per clock, and its float32 lanes complete lanes / 32 warp-wide
multiply-adds per clock. A kernel that needs w wavefronts per f warp-wide multiply-adds
can therefore run at most at (f / w) / (lanes / 32) of the float32 peak.
"""

import dataclasses
import math
from fractions import Fraction

from kernels import hardware
from kernels import matmul as mm
from kernels import matmul_fast as mf

# (wavefronts, warp-wide multiply-adds) per k-step of one warp, as the chapter counts them
TILED_WAVEFRONTS = (2, 1)        # a_tile broadcast + b_tile row, for one multiply-add
THREAD_TILE_1D_WAVEFRONTS = (9, 8)  # 8 broadcasts of a + one row of b, for 8
THREAD_TILE_2D_WAVEFRONTS = (6, 64)  # two 128-bit loads of a, two of b (2 each), for 64


def shared_memory_bound(wavefronts, fmas, lanes):
    """The fraction of the float32 peak that w wavefronts per f warp-wide multiply-adds
    allow on an SM of `lanes` float32 lanes (at most 1: then shared memory is no limit)."""
    if wavefronts <= 0 or fmas <= 0:
        raise ValueError(f"wavefronts and fmas must be positive, got {wavefronts}, {fmas}")
    return min(Fraction(1), Fraction(fmas, wavefronts) / Fraction(lanes, hardware.WARP))


@dataclasses.dataclass(frozen=True)
class Bounds:
    """One GPU's bounds for the chapter's kernels, and its launches at size n."""

    name: str
    sm_count: int
    lanes: int                   # float32 lanes per SM
    clock_ghz: float
    peak_tflops: float           # SMs x lanes x 2 x clock
    warp_fmas_per_clock: Fraction  # per SM: lanes / 32
    tiled: Fraction              # fraction of the peak the 16 x 16 tiled kernel can reach
    thread_tile_1d: Fraction
    saturating_wavefronts_2d: Fraction  # wavefronts per 64 warp multiply-adds that would
                                        # make shared memory the limit
    registers_per_thread_2d: int  # the cap that lets mm.BLOCKS_PER_SM_2D blocks share an SM
    n: int
    tiles: int                   # 128 x 128 tiles of an n x n c
    blocks_per_sm: int           # 2D-kernel blocks resident on one SM
    slots: int                   # blocks the GPU runs at once: SMs x blocks_per_sm
    splits: int                  # matmul_split_k's shares of the sum over k at n
    shares: tuple                # values of k each share sums over
    one_block_fits: bool         # matmul_one_block_per_sm compiles for one block per SM
    splits_one: int              # its shares of the sum over k at n

    @property
    def idle(self):
        """Fraction of the SMs that get no tile, one block per tile (a second block on
        an SM shares its lanes: an empty block slot is not idle throughput)."""
        return max(0.0, 1 - self.tiles / self.sm_count)

    @property
    def atomic_adds(self):
        """Atomic adds of partial results that split-k makes into c (0 unsplit)."""
        return self.splits * self.n * self.n if self.splits > 1 else 0

    @property
    def split_gain(self):
        """The most split-k can gain: SMs at work, split over unsplit. Not blocks at
        work: a second block on an SM does not double its rate."""
        return (min(self.splits * self.tiles, self.sm_count)
                / min(self.tiles, self.sm_count))

    def bound_tflops(self, fraction):
        return float(fraction) * self.peak_tflops


def _shares(k, splits):
    _, chunk = mf._shares(k, k, k, splits)
    return tuple(min(chunk, k - start) for start in range(0, k, chunk))


def bounds(device, n=1000):
    """Bounds of the chapter's kernels and launches on `device` (a kernels.device() or
    recorded device dict: name, compute_capability, sm_count, clock_khz) at size n."""
    missing = [k for k in ("name", "compute_capability", "sm_count", "clock_khz")
               if not device.get(k)]
    if missing:
        raise ValueError(f"the device must name its {', '.join(missing)} (a GPU's "
                         f"kernels.device() or a recording's device); got {device!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    cc, sms = device["compute_capability"], int(device["sm_count"])
    lanes = hardware.fp32_lanes_per_sm(cc)
    by_threads = hardware.max_threads_per_sm(cc) // mm.THREADS_2D
    blocks_per_sm = min(mm.BLOCKS_PER_SM_2D, by_threads)
    tiles = math.ceil(n / mm.BM) * math.ceil(n / mm.BN)
    splits = mf.split_k(n, n, n, sms)
    splits_one = mf.split_k(n, n, n, sms, blocks_per_sm=1)
    return Bounds(
        name=device["name"], sm_count=sms, lanes=lanes,
        clock_ghz=device["clock_khz"] / 1e6,
        peak_tflops=hardware.fp32_peak_tflops(sms, cc, device["clock_khz"]),
        warp_fmas_per_clock=Fraction(lanes, hardware.WARP),
        tiled=shared_memory_bound(*TILED_WAVEFRONTS, lanes),
        thread_tile_1d=shared_memory_bound(*THREAD_TILE_1D_WAVEFRONTS, lanes),
        saturating_wavefronts_2d=(THREAD_TILE_2D_WAVEFRONTS[1]
                                  / Fraction(lanes, hardware.WARP)),
        registers_per_thread_2d=hardware.REGISTERS_PER_SM // (mm.BLOCKS_PER_SM_2D
                                                              * mm.THREADS_2D),
        n=n, tiles=tiles, blocks_per_sm=blocks_per_sm, slots=sms * blocks_per_sm,
        splits=splits, shares=_shares(n, splits),
        one_block_fits=mf.fits_one_block_per_sm(n, n, n, sms), splits_one=splits_one)


def _count(values):
    """1, 2 and 3 -> '1, 2 and 3'."""
    words = [f"{v}" for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def phrases(b):
    """The chapter's glued texts for Bounds `b`, by glue name."""
    side = math.ceil(b.n / mm.BM)
    out = {
        "peak_tf": f"{b.peak_tflops:.0f}",
        "peak_formula": (f"{b.sm_count} SMs \u00d7 {b.lanes} float32 lanes \u00d7 2 flops "
                         f"\u00d7 {b.clock_ghz:.2f} GHz"),
        "lanes": f"{b.lanes}",
        "warp_fmas": f"{b.warp_fmas_per_clock}",
        "frac_tiled": f"{b.tiled}",
        "frac_1d": f"{b.thread_tile_1d}",
        "bound_tiled": f"{b.bound_tflops(b.tiled):.1f}",
        "bound_1d": f"{b.bound_tflops(b.thread_tile_1d):.1f}",
        "x_bound_1d": f"{float(b.thread_tile_1d / b.tiled):.1f}",
        "saturating_2d": f"{b.saturating_wavefronts_2d}",
        "regs_per_sm": f"{hardware.REGISTERS_PER_SM:,}",
        "regs_cap": f"{b.registers_per_thread_2d}",
        "gpu": b.name,
        "sms": f"{b.sm_count}",
        "tiles_side": f"{side}",
        "tiles": f"{b.tiles}",
        "blocks_per_sm": {1: "one block", 2: "two blocks"}.get(b.blocks_per_sm,
                                                                  f"{b.blocks_per_sm} blocks"),
        "slots": f"{b.slots}",
        "idle_pct": f"{100 * b.idle:.0f}",
        # on a GPU with fewer SMs than tiles (a T4: 40 for 64) no SM is idle
        "tiles_idle": (f"{100 * b.idle:.0f}% of the SMs get no tile at all" if b.idle > 0
                       else f"every SM gets a tile, and {b.slots - b.tiles} of the "
                            f"{b.slots} places for blocks stay empty" if b.tiles < b.slots
                       else "every SM gets a tile and every place for a block is taken"),
        "splits": f"{b.splits}",
        "shares": _count(b.shares),
        "atomic_adds": f"{b.atomic_adds / 1e6:,.0f} million" if b.atomic_adds >= 1e6
                       else f"{b.atomic_adds:,}",
        "split_gain": f"{b.split_gain:.1f}",
    }
    if b.splits > 1:
        out["split_predicted"] = (
            f"{b.splits} shares make {b.splits * b.tiles} blocks, enough to give every "
            f"one of the {b.sm_count} SMs work where {b.tiles} blocks left "
            f"{100 * b.idle:.0f}% of them idle: up to \u00d7 {b.split_gain:.1f} at "
            f"n = {b.n} (SMs at work; a second block on an SM shares its lanes), less "
            f"what the zeroing launch and the atomic adds cost")
        out["split_costs"] = (
            f": the zeroing launch, {out['atomic_adds']} atomic adds of partial results "
            f"({b.splits} per element of c), and each block's shorter sum "
            f"({out['shares']} values of k, so the first loads and the final writes "
            f"weigh more) take back part of the gain")
    else:
        out["split_predicted"] = (
            f"no change: on this GPU split_k returns 1 at n = {b.n}, as two shares "
            f"of its {b.tiles} tiles would be more blocks than its {b.slots} places")
        out["split_costs"] = ""
    if b.one_block_fits:
        split = (f"split {b.splits_one} ways instead of {b.splits}" if b.splits_one > 1
                 else "unsplit")
        out["one_block_case"] = (
            f"at n = {b.n}, {split}, the {b.tiles} tiles make "
            f"{b.tiles * b.splits_one} blocks for {b.sm_count} SMs")
        if b.splits_one > 1:
            fewer = (f"{b.splits_one} partial tiles to add into each tile of c instead "
                     f"of {b.splits}, so fewer atomic adds, and ")
        elif b.splits > 1:
            fewer = (f"no split, so no zeroing launch and no atomic adds (instead of "
                     f"{b.splits} shares), and ")
        else:
            fewer = ""
        out["one_block_predicted"] = (f"faster at n = {b.n} only: {fewer}a freer hand "
                                      f"for the compiler")
    else:
        out["one_block_case"] = (
            f"on this GPU that is not the case at n = {b.n}: its {b.tiles} tiles "
            f"alone outnumber the {b.sm_count} SMs")
        out["one_block_predicted"] = (
            f"no change at any size here: on this GPU even n = {b.n} needs more "
            f"blocks than SMs, so it runs matmul_clamped_edges throughout")
    return out
