"""What a trace says about order: races between threads and between streams, barriers
not every thread met, the order locks were taken in.

Every analysis reads what stands between accesses (barriers, atomics, locks, stream
orderings), not the order in which the simulator happened to run the threads; only
lock_order reports that order.
"""

import bisect
import collections
import dataclasses

from kernels.trace import fixes, order
from kernels.trace.model import HOST, index_text


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
                f"({what(self.second)}) both touch {self.array}[{index_text(self.index)}] "
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
    one writing, not both atomic, not two writes of the same value, that nothing
    orders: no block barrier between them (same block), no grid barrier, no lock both
    hold, no chain of barriers and atomic releases and acquires (kernels.trace.order). One race is reported per element, in
    order of array and index; the pair is chosen and listed by block and thread."""
    launches = trace.launches if kernel is None else [trace.launch(kernel)]
    found = []
    for launch in launches:
        fix = fixes.Fixes(launch)  # what is missing, for the kind of race each is
        for accesses in _elements(launch):
            race = _first_race(accesses)
            if race is not None:
                w, o = sorted(race, key=_by_thread)
                found.append(Race(launch.kernel, w.array, w.index, w, o,
                                  *fix.why(w, o), launch.number))
    return found


def _elements(launch):
    """The accesses of `launch` to each element (shared memory's: per block), by thread,
    in order of array and index."""
    by_element = collections.defaultdict(list)
    for a in launch.accesses:
        block = a.block[::-1] if a.space == "shared" else None
        by_element[(a.array, block, a.index)].append(a)
    return [sorted(by_element[key], key=_by_thread) for key in sorted(by_element)]


def _by_thread(a):
    return a.block[::-1], a.tid, a.site[2], a.site[1]


def _first_race(accesses):
    writes = [a for a in accesses if a.kind != "read"]
    if not writes or all(a.kind == "atomic" for a in accesses) or _all_ordered(accesses):
        return None
    atomics = _atomics_by_thread(accesses)
    plain = [a for a in accesses if a.kind != "atomic"]  # all an atomic can race with
    knows = order.knows
    for w in writes:
        block, tid, clock = w.block, w.tid, w.clock
        for o in (plain if w.kind == "atomic" else accesses):
            # the pairs that clocks order, passed over here without _conflict's calls
            # (thousands of threads take turns at one element: quadratic); the test is
            # _ordered's where both have clocks, and changes with it
            if (o.tid == tid and o.block == block) or clock is not None and \
                    o.clock is not None and (knows(o.clock, w) or knows(clock, o)):
                continue
            if _conflict(w, o, atomics):
                return w, o
    return None


def _all_ordered(accesses):
    """Whether every two accesses to one element, of different threads and at least one
    of them a write or an atomic, are ordered (kernels.trace.order): then none races, and
    the pairwise search (quadratic: thousands of threads take turns at one bin) need not
    run. Read in the order the accesses ran, each is checked against the last write (or
    atomic) before it, and each write also against the reads since that one: every other
    pair follows, as the order checked is transitive (a clock knows all its thread knew
    before, and what every clock it joined knew; a block barrier's epoch is not used, as
    a thread that left before the barrier is not in it). Where a check fails, or an
    access has no clock, the pairwise search decides."""
    last, reads = None, []
    for c in sorted(accesses, key=lambda a: a.seq):
        if c.clock is None or (last is not None and not _follows(last, c)):
            return False
        if c.kind == "read":
            reads.append(c)
        elif all(_follows(r, c) for r in reads):
            last, reads = c, []
        else:
            return False
    return True


def _follows(a, b):
    """b comes after a (which ran first) in their thread, or a happens before b by an
    order that composes (order.known_through_releases)."""
    return (a.tid == b.tid and a.block == b.block) or order.known_through_releases(a, b)


def conflict(a, b, accesses=()):
    """Whether accesses `a` and `b` to one element race: made by different threads, at
    least one writing, not both atomic, not two writes of one value, and nothing orders
    them (a barrier, a lock both
    hold, a chain of barriers and atomics, or, among `accesses` to the element, an
    atomic of the plain access's thread between them)."""
    return _conflict(a, b, _atomics_by_thread(accesses))


def _conflict(a, b, atomics):
    if a.tid == b.tid and a.block == b.block:
        return False
    if "read" == a.kind == b.kind or "atomic" == a.kind == b.kind:
        return False
    if "write" == a.kind == b.kind and a.value is not None and a.value == b.value:
        return False  # the same value either way (threads that all set a flag to 1)
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


# ------------------------------------------------------------------- stuck locks

SPIN_WINDOW = 2_000  # the last accesses of a launch whose recording grew too large
LOCK_OPS = ("cas", "compare_and_swap", "exch")


def stuck_lock(launch):
    """Where the recording of `launch` grew too large: in words, the locks its threads
    were spinning on (most of its last accesses were to elements of one array that they
    compare-and-swapped, and none was taken or freed meanwhile), or "" if it was doing
    something else."""
    tail = launch.accesses[-SPIN_WINDOW:]
    inside = {id(a) for a in tail}
    if any(id(a) in inside for _, a, _ in launch.lock_events[-SPIN_WINDOW:]):
        return ""  # a lock was taken or freed meanwhile: slow under contention, not stuck
    tried = {(a.array, a.index) for a in tail if a.kind == "atomic" and a.op in LOCK_OPS}
    spins = collections.Counter((a.array, a.index) for a in tail
                                if (a.array, a.index) in tried)
    if not spins:
        return ""
    (array, index), _ = spins.most_common(1)[0]
    n = sum(count for (name, _), count in spins.items() if name == array)
    if 2 * n < len(tail):
        return ""
    return (f"the locks in {array} never became free ({array}[{index_text(index)}] among "
            f"them): {n:,} of the last {len(tail):,} accesses of {launch.kernel} were "
            "threads trying to take one, and none was taken or freed, until the tracer's "
            "limit on accesses stopped them. "
            "Most likely they were never set to 0 before the launch (cuda.device_array "
            "leaves memory as it was; cuda.to_device(np.zeros(n, np.int32)) is zeroed), or "
            "a thread that took one never released it")
