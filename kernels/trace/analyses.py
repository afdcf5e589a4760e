"""What a trace says about memory access: coverage, 32-byte sectors, bank conflicts
(races and lock order: kernels.trace.hazards).

Every analysis reads the access pattern (who touched what), not the order in which
the simulator happened to run the threads; only which of several writers coverage
names first reports that order.
"""

import collections
import dataclasses
import math

import numpy as np

from kernels.trace.model import index_text

SECTOR = 32  # bytes: the unit in which a GPU moves global memory
BANKS = 32  # shared memory banks, each 4 bytes wide
WORD = 4


def _global_thread(access, launch):
    gx, gy, _ = launch.grid
    block = access.block[0] + gx * (access.block[1] + gy * access.block[2])
    return block, block * launch.threads_per_block + access.tid


# ------------------------------------------------------------------ coverage


@dataclasses.dataclass
class Coverage:
    """Which thread wrote each element of one array in one launch."""
    kernel: str
    array: str
    thread: np.ndarray  # global linear thread index of the first writer; -1: none
    block: np.ndarray  # linear block index of that writer; -1: none
    writers: np.ndarray  # how many different threads wrote the element
    writes: np.ndarray  # how many writes the element got, from all threads together
    labels: np.ndarray  # the first writer's cuda.grid() index as text: "5", or "5,2" in 2D
    first: dict  # index -> the first write of that element (an Access)

    @property
    def missed(self):
        """Indices of the elements no thread wrote."""
        return [tuple(int(i) for i in ix) for ix in np.argwhere(self.writers == 0)]

    @property
    def repeated(self):
        """Indices of the elements more than one thread wrote."""
        return [tuple(int(i) for i in ix) for ix in np.argwhere(self.writers > 1)]

    def describe(self):
        """One line: complete, or which elements were missed or written twice."""
        missed, repeated = self.missed, self.repeated
        if not missed and not repeated:
            return f"every element of {self.array} was written by exactly one thread"
        parts = []
        if missed:
            parts.append(f"{len(missed)} elements of {self.array} were never written: "
                         + _some(missed))
        if repeated:
            ix = repeated[0]
            parts.append(f"{len(repeated)} elements were written by more than one thread "
                         f"({self.array}[{index_text(ix)}] by {int(self.writers[ix])} threads)")
        return "; ".join(parts)


def _some(indices, shown=4):
    """The first `shown` of sorted `indices`, runs of 1D indices as ranges ("8-11"), and
    how many more there are: "8-11, 16 and 3 more"."""
    if all(len(ix) == 1 for ix in indices):
        runs = []
        for (i,) in indices:
            if runs and runs[-1][1] == i - 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        items = [(f"{a}-{b}" if b > a + 1 else f"{a}, {b}" if b > a else f"{a}", b - a + 1)
                 for a, b in runs]
    else:
        items = [(f"({index_text(ix)})", 1) for ix in indices]
    text = ", ".join(t for t, _ in items[:shown])
    rest = sum(n for _, n in items[shown:])
    return text + (f" and {rest} more" if rest else "")


def coverage(trace, array, kernel=None, kinds=("write",)):
    """Which thread wrote (or, with kinds, touched) each element of `array`."""
    launch = trace.launch(kernel)
    shape = launch.arrays[array]["shape"] if array in launch.arrays else None
    accesses = launch.of(array, kinds)
    thread = np.full(shape, -1, np.int64)
    block = np.full(shape, -1, np.int64)
    labels = np.full(shape, "", object)
    dims = 2 if launch.grid[1] > 1 or launch.block[1] > 1 else 1
    who = collections.defaultdict(set)
    first = {}
    for a in accesses:
        b, t = _global_thread(a, launch)
        if a.index not in first:
            first[a.index] = a
            thread[a.index], block[a.index] = t, b
            labels[a.index] = ",".join(str(a.block[d] * launch.block[d] + a.thread[d])
                                       for d in range(dims))
        who[a.index].add(t)
    writers = np.zeros(shape, np.int64)
    for ix, threads in who.items():
        writers[ix] = len(threads)
    writes = np.zeros(shape, np.int64)
    for a in accesses:
        writes[a.index] += 1
    return Coverage(launch.kernel, array, thread, block, writers, writes, labels, first)


# ------------------------------------------------------------------- sectors


@dataclasses.dataclass
class WarpAccess:
    """One warp-wide load or store: the accesses of one warp's lanes at one instruction."""
    block: tuple
    warp: int
    kind: str
    accesses: list  # one per active lane
    units: int  # 32-byte sectors (global) or the worst bank's distinct words (shared)
    ideal: int  # the fewest that many distinct elements could need

    @property
    def lanes(self):
        return len(self.accesses)


def _warp_groups(launch, array, kinds):
    """Accesses grouped by (block, warp, instruction, occurrence), each sorted by
    lane; groups in block, warp, occurrence order (not the simulator's order)."""
    groups = collections.defaultdict(list)
    for a in launch.of(array, kinds):
        groups[(a.block[::-1], a.warp, a.site[2], a.site[1], a.site[0])].append(a)
    return [sorted(groups[key], key=lambda a: a.lane) for key in sorted(groups)]


@dataclasses.dataclass
class SectorCount:
    kernel: str
    array: str
    kind: str
    warp_accesses: list

    @property
    def mean(self):
        return float(np.mean([w.units for w in self.warp_accesses]))

    @property
    def mean_ideal(self):
        return float(np.mean([w.ideal for w in self.warp_accesses]))

    @property
    def worst(self):
        return max(self.warp_accesses, key=lambda w: (w.units - w.ideal, w.units))

    def describe(self):
        verb = {"read": "loads", "write": "stores", "atomic": "atomics"}[self.kind]
        return (f"{verb} of {self.array} touch {self.mean:.3g} sectors of 32 bytes per "
                f"warp where {self.mean_ideal:.3g} would do")


def sectors(trace, array, kernel=None, kind="read"):
    """32-byte sectors each warp-wide access of global `array` touches.

    A warp's lanes that run the same access instruction together form one request;
    it moves every 32-byte sector (counted from the start of the allocation, which
    CUDA aligns to 256 bytes) that any lane touches. `ideal` is the fewest sectors
    that hold that many distinct elements.

    Lanes are paired by how many times each has run the access (its k-th run with
    the other lanes' k-th): right while the warp's lanes run it equally often, as a
    converged warp does; where they diverge, the pairing is an approximation."""
    launch = trace.launch(kernel)
    if launch.arrays.get(array, {}).get("space") == "shared":
        raise ValueError(f"{array} is a shared array: sectors are for global memory; "
                         "use bank_conflicts")
    found = []
    for group in _warp_groups(launch, array, (kind,)):
        touched = {a.sector_base // SECTOR for a in group}
        distinct = {a.address for a in group}
        ideal = math.ceil(len(distinct) * group[0].itemsize / SECTOR)
        found.append(WarpAccess(group[0].block, group[0].warp, kind, group, len(touched),
                                ideal))
    if not found:
        raise ValueError(f"{launch.kernel} made no {kind} of {array}")
    return SectorCount(launch.kernel, array, kind, found)


# ------------------------------------------------------------- bank conflicts


def words(access, row_length=None):
    """The 4-byte shared-memory words an access covers; with `row_length`, as if the
    (2D) shared array's rows were that many elements long."""
    if row_length is None:
        start = access.address // WORD
    else:
        *outer, last = access.index
        if len(outer) != 1:
            raise ValueError("row_length applies to 2D shared arrays only")
        start = (outer[0] * row_length + last) * access.itemsize // WORD
    return range(start, start + max(1, access.itemsize // WORD))


@dataclasses.dataclass
class BankCount:
    kernel: str
    array: str
    row_length: object  # None: the array's own layout
    shape: tuple  # the array's real shape
    itemsize: int
    warp_accesses: list

    @property
    def worst(self):
        return max(self.warp_accesses, key=lambda w: w.units)

    @property
    def mean(self):
        return float(np.mean([w.units for w in self.warp_accesses]))

    def describe(self):
        worst = max(self.warp_accesses, key=lambda w: (w.units - w.ideal, w.units))
        if worst.units <= worst.ideal:  # 8-byte words take 2 passes without a conflict
            return (f"accesses to shared {self.array} take {_passes(worst.units)} through "
                    "the banks per warp access, the fewest their words allow: no bank "
                    "conflicts")
        ways = math.ceil(worst.units / worst.ideal)
        return (f"accesses to shared {self.array} take up to {_passes(worst.units)} "
                f"through the banks per warp access where {worst.ideal} would do "
                f"({ways}-way bank conflict), {self.mean:.3g} on average")


def _passes(n):
    return "1 pass" if n == 1 else f"{n} passes"


def bank_conflicts(trace, array, kernel=None, kinds=("read", "write", "atomic"),
                   row_length=None):
    """For each warp-wide access of shared `array`: the largest number of different
    4-byte words asked of one bank (lanes reading one word share it). Atomics to one
    word do not share: every atomic counts. `row_length` recomputes the addresses as
    if the rows of the 2D array had that many elements (e.g. without its padding)."""
    launch = trace.launch(kernel)
    if launch.arrays.get(array, {}).get("space") != "shared":
        raise ValueError(f"{array} is not a shared array of {launch.kernel}; its shared "
                         "arrays: " + ", ".join(n for n, a in launch.arrays.items()
                                                if a["space"] == "shared"))
    found = []
    for group in _warp_groups(launch, array, kinds):
        per_bank = collections.defaultdict(list)
        for a in group:
            for w in words(a, row_length):
                per_bank[w % BANKS].append(w)
        atomic = group[0].kind == "atomic"
        ways = max(len(v) if atomic else len(set(v)) for v in per_bank.values())
        distinct = len({w for v in per_bank.values() for w in v})
        # A wide access (8 or 16 bytes a lane) needs at least one pass per 32 words:
        # that many are no conflict.
        found.append(WarpAccess(group[0].block, group[0].warp, group[0].kind, group, ways,
                                max(1, math.ceil(distinct / BANKS))))
    if not found:
        raise ValueError(f"{launch.kernel} made no access of kinds {kinds} to {array}")
    info = launch.arrays[array]
    return BankCount(launch.kernel, array, row_length, info["shape"], info["dtype"].itemsize,
                     found)
