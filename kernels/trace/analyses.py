"""What a trace says: coverage, 32-byte sectors, bank conflicts, races.

Every analysis reads the access pattern (who touched what, and which barriers,
atomics, locks and stream orderings stand between accesses), not the order in which
the simulator happened to run the threads; only lock_order, and which of several
writers coverage names first, report that order.
"""

import bisect
import collections
import dataclasses
import math

import numpy as np

from kernels.trace import fixes, order
from kernels.trace.model import HOST

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
                         f"({self.array}[{_index(ix)}] by {int(self.writers[ix])} threads)")
        return "; ".join(parts)


def _index(ix):
    return ", ".join(str(i) for i in ix)


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
        items = [(f"({_index(ix)})", 1) for ix in indices]
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


# --------------------------------------------------------------------- races


@dataclasses.dataclass
class Race:
    kernel: str
    array: str
    index: tuple
    first: object  # Access
    second: object  # Access
    why: str  # what is missing between them, in words
    missing: str  # the same, in a few words: "a grid barrier (grid.sync())"
    launch: int  # the launch's number in the trace (Launch.number)

    def describe(self):
        def what(a):
            return "an atomic" if a.kind == "atomic" else f"a {a.kind}"
        return (f"{self.first.who()} ({what(self.first)}) and {self.second.who()} "
                f"({what(self.second)}) both touch {self.array}[{_index(self.index)}] "
                f"{self.why}")


def _ordered(a, b, atomics):
    """True if something orders accesses a and b of one launch to one element: a
    chain of barriers and fenced atomics (kernels.trace.order: a lock both hold orders
    them only so, through the fences around it), or the element's own atomics between
    them (`atomics`: _atomics_by_thread)."""
    if a.clock is None or b.clock is None:  # recorded without clocks: barriers, locks
        if (a.block == b.block and a.epoch != b.epoch) or a.locks & b.locks:
            return True
    elif order.ordered(a, b):
        return True
    return _atomic_between(a, b, atomics)


def _atomics_by_thread(accesses):
    """{(block, tid): sorted seq of its atomics} among the accesses to one element."""
    found = collections.defaultdict(list)
    for a in accesses:
        if a.kind == "atomic":
            found[(a.block, a.tid)].append(a.seq)
    for seqs in found.values():
        seqs.sort()
    return found


def _atomic_between(a, b, atomics):
    """One of a, b is atomic and the other's thread made an atomic on the element
    between them (in the order the atomics ran): the modification order orders them."""
    if (a.kind == "atomic") == (b.kind == "atomic"):
        return False
    x, y = (a, b) if a.kind == "atomic" else (b, a)
    lo, hi = sorted((x.seq, y.seq))
    seqs = atomics.get((y.block, y.tid), ())
    i = bisect.bisect_right(seqs, lo)
    return i < len(seqs) and seqs[i] < hi


def races(trace, kernel=None):
    """Pairs of accesses to one address, by different threads of one launch, at least
    one writing, not both atomic, that nothing orders: no block barrier between them
    (same block), no grid barrier, no lock both hold, no chain of barriers and atomic
    releases and acquires (kernels.trace.order). One race is reported per element, in
    order of array and index; the pair is chosen and listed by block and thread."""
    launches = trace.launches if kernel is None else [trace.launch(kernel)]
    found = []
    for launch in launches:
        fix = fixes.Fixes(launch)  # what is missing, for the kind of race each is
        by_element = collections.defaultdict(list)
        for a in launch.accesses:
            block = a.block[::-1] if a.space == "shared" else None  # shared: per block
            by_element[(a.array, block, a.index)].append(a)
        for key in sorted(by_element):
            accesses = sorted(by_element[key], key=_by_thread)
            race = _first_race(accesses)
            if race is not None:
                w, o = sorted(race, key=_by_thread)
                found.append(Race(launch.kernel, w.array, w.index, w, o,
                                  *fix.why(w, o), launch.number))
    return found


def _by_thread(a):
    return a.block[::-1], a.tid, a.site[2], a.site[1]


def _first_race(accesses):
    writes = [a for a in accesses if a.kind != "read"]
    if not writes or all(a.kind == "atomic" for a in accesses):
        return None
    atomics = _atomics_by_thread(accesses)
    plain = [a for a in accesses if a.kind != "atomic"]  # all an atomic can race with
    for w in writes:
        for o in (plain if w.kind == "atomic" else accesses):
            if _conflict(w, o, atomics):
                return w, o
    return None


def conflict(a, b, accesses=()):
    """Whether accesses `a` and `b` to one element race: made by different threads, at
    least one writing, not both atomic, and nothing orders them (a barrier, a lock both
    hold, a chain of barriers and atomics, or, among `accesses` to the element, an
    atomic of the plain access's thread between them)."""
    return _conflict(a, b, _atomics_by_thread(accesses))


def _conflict(a, b, atomics):
    if a.tid == b.tid and a.block == b.block:
        return False
    if "read" == a.kind == b.kind or "atomic" == a.kind == b.kind:
        return False
    return not _ordered(a, b, atomics)


# ------------------------------------------------------------- stream races


@dataclasses.dataclass
class StreamRace:
    first: object  # Operation
    second: object  # Operation
    memory: str  # which device memory both touch
    span: tuple  # (start, end): the first device bytes both touch, one writing

    def describe(self):
        def where(op):
            return ("the legacy default stream" if op.stream == 0 else
                    f"stream {op.stream}")
        if self.second.stream == HOST:
            return (f"the host reads {self.memory} after the call, but {self.first.what} "
                    f"on {where(self.first)} may still be writing it (into pinned memory a "
                    "copy returns before it is done), and nothing makes the host wait for "
                    "it: synchronize that stream (or an event recorded after the copy) "
                    "before the result is used")
        return (f"{self.first.what} on {where(self.first)} and {self.second.what} on "
                f"{where(self.second)} both use {self.memory}, at least one writing, and "
                "nothing orders the two streams (no stream order, event or "
                "synchronisation puts one first): give each its own device memory, or "
                "make one wait for the other")


def _before(a, b):
    return a.clock.get(a.stream, 0) <= b.clock.get(a.stream, 0)


def _overlap(xs, ys):
    """The first (start, end) where the byte ranges xs and ys overlap, or None."""
    xs, ys = _merged(xs), _merged(ys)
    i = j = 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if lo < hi:
            return lo, hi
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return None


def _merged(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def barriers(trace):
    """Block barriers that not every thread of the block met together, in words, one per
    barrier (a cuda.syncthreads() in a branch: order.Sync.diverged)."""
    return [f"in {launch.kernel}, {what}" for launch in trace.launches
            for what in launch.diverged]


def stream_races(trace):
    """Pairs of stream operations (copies, kernels) on device memory that overlaps, at
    least one writing it, that no stream order, event or synchronisation orders."""
    ops = trace.operations
    found = []
    for i, a in enumerate(ops):
        for b in ops[i + 1:]:
            if _before(a, b) or _before(b, a):
                continue
            hit = (_overlap(a.writes, b.writes + b.reads) or _overlap(b.writes, a.reads))
            if hit:
                found.append(StreamRace(a, b, _memory_name(trace, hit), hit))
    return found


def _memory_name(trace, span):
    lo, hi = span
    base = max((r for r in trace.regions if r <= lo), default=None)
    if base is None:
        return f"{hi - lo} bytes of device memory"
    return f"bytes {lo - base}-{hi - base} of {trace.regions[base]}"


# --------------------------------------------------------------------- locks


def lock_order(trace, kernel=None):
    """[(access, "take" or "release")] of a launch's locks, in the order the simulator
    ran them (one possible order: on a GPU the queue forms in arrival order)."""
    launch = trace.launch(kernel)
    return [(access, change) for _, access, change in launch.lock_events]
