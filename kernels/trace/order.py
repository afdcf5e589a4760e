"""Happens-before between the accesses of one launch: vector clocks, kept small.

Each simulated thread carries a Clock: what it knows to have happened before its
next access. Three kinds of entries keep it small where a plain vector clock would
hold one number per thread of the grid:

* ``grid``: grid barriers passed; every access made before the g-th grid.sync()
  happens before an access whose clock has grid > g (all blocks, all threads);
* ``blocks``: block -> block barriers known; every access of that block made before
  its e-th cuda.syncthreads() happens before one whose clock has blocks[block] > e;
* ``threads``: (block, tid) -> counter; an access that thread made while its counter
  was c happens before one whose clock has threads[(block, tid)] >= c. A thread's
  counter steps at each release, so what it does after the release is not covered.

What orders accesses (the synchronisation the tracer understands):

* a block barrier joins the clocks of the block's threads;
* a grid barrier (all blocks live, kernels.trace.blocks) joins everything;
* an atomic is a release on its address when the thread called cuda.threadfence()
  since its last atomic and its last write to global memory (an atomic alone orders no
  other access, in CUDA's memory model, and a fence only the writes before it);
* an atomic reads what earlier releases on its address published, and its thread
  acquires that at its next cuda.threadfence(): the acquiring side needs its own fence
  after the atomic, before it reads the data (without it a GPU may perform the reads
  early, or serve them from a stale copy in its SM's L1 cache). Locks taken with
  compare-and-swap (or exch) and released with exch are such atomics on the lock's
  word: a lock orders what it guards only with a fence after its taking atomic and a
  fence before its release, as kernels.locks.lock and unlock have.

Atomics on one word are also ordered among themselves (its modification order): a
plain access by a thread after its own atomic on the word follows every atomic on
that word that ran before (the last block that resets a counter it drew the last
ticket from), and one before its own atomic precedes every atomic that runs after.

Acquire and release follow the order in which the simulator ran the atomics (the
ticket a thread drew, the lock it found free): a property of this run, as on a GPU.
"""

import dataclasses
import threading
import weakref


@dataclasses.dataclass(frozen=True)
class Clock:
    grid: int = 0
    blocks: dict = dataclasses.field(default_factory=dict)
    threads: dict = dataclasses.field(default_factory=dict)
    # the clocks joined into this one (weak: a chain of joins keeps no old clock alive),
    # so that joining one of them again costs nothing: a thread that waits for a lock
    # joins each release on it into what it read before, which that release holds
    joined: tuple = dataclasses.field(default=(), compare=False, repr=False)

    def __reduce__(self):  # a weak reference cannot be pickled: what it held is not kept
        return Clock, (self.grid, self.blocks, self.threads)

    def holds(self, other):
        """Whether `other` was joined into this clock (so it knows all it knows)."""
        return any(ref() is other for ref in self.joined)


EMPTY = Clock()


def join(*clocks):
    """The least clock that knows everything each of `clocks` knows: one of them, not a
    copy, where it holds each of the others (or they are empty or that same clock: a
    thread that spins on a lock joins what the lock released into what it already holds,
    at every try)."""
    distinct = []
    for c in clocks:
        if c is not EMPTY and not any(c is d for d in distinct):
            distinct.append(c)
    if len(distinct) < 2:
        return distinct[0] if distinct else EMPTY
    for c in distinct:
        if all(d is c or c.holds(d) for d in distinct):
            return c
    grid = max(c.grid for c in distinct)
    # from a copy of the largest tables (made in C), each other entry looked at once:
    # where threads take locks, the tables hold most threads of the grid
    blocks = dict(max((c.blocks for c in distinct), key=len))
    threads = dict(max((c.threads for c in distinct), key=len))
    for c in distinct:
        for k, v in c.blocks.items():  # a few blocks
            if v > blocks.get(k, 0):
                blocks[k] = v
        if not c.threads.items() <= threads.items():  # (compared in C)
            for k, v in c.threads.items():
                if v > threads.get(k, -1):
                    threads[k] = v
    return Clock(grid, blocks, threads, tuple(weakref.ref(c) for c in distinct))


def happens_before(a, b):
    """True if access `a` is known to happen before access `b` (of another thread)."""
    return knows(b.clock, a)


def known_through_releases(a, b):
    """True if access `a` happens before access `b` by what b's clock holds of a's
    thread (releases it acquired, joined at barriers) or by a grid barrier: the part of
    happens_before that composes (if this holds for a, b and for b, c, it holds for a,
    c). A block barrier's epoch alone does not: it stands for the threads that arrived
    at the barrier, and a thread that left before it, which knew of an access of another
    block, passes that knowledge to no one."""
    c = b.clock
    return c.grid > a.grid_epoch or c.threads.get((a.block, a.tid), -1) >= a.counter


def after_a_fence(a, b):
    """True if access `a` would happen before access `b` had b's thread fenced after
    its last atomics (Access.pending): the acquiring side's fence is what is missing."""
    return b.pending is not None and knows(join(b.clock, b.pending), a)


def knows(c, a):
    """Whether clock `c` knows of access `a`: its grid barrier, its block's barrier, or
    its thread's release."""
    return (c.grid > a.grid_epoch or c.blocks.get(a.block, 0) > a.epoch
            or c.threads.get((a.block, a.tid), -1) >= a.counter)


def ordered(a, b):
    return happens_before(a, b) or happens_before(b, a)


class Sync:
    """The synchronisation state of one launch: barriers met and atomics' releases."""

    def __init__(self):
        self._lock = threading.RLock()
        self._barriers = {}  # (block, barrier number) -> join of the arrivals' clocks
        self._released = {}  # address -> join of the clocks released on it
        # (address, block) -> those released after a fence of the block's scope only
        # (cuda.threadfence_block()): acquired by the threads of that block alone
        self._released_in_block = {}
        self._arrivals = {}  # (block, barrier number) -> {thread: (function, line)}

    @staticmethod
    def state(thread):
        """(clock, counter, grid barriers, block barriers, pending) of a simulated
        thread; pending: what its atomics since its last fence read, which it does not
        know yet (None: no atomic since its last fence)."""
        return (getattr(thread, "_clock", EMPTY), getattr(thread, "_counter", 0),
                getattr(thread, "_grid_epoch", 0), getattr(thread, "_epoch", 0),
                getattr(thread, "_pending", None))

    @staticmethod
    def fence(thread, scope="device"):
        """cuda.threadfence() (or threadfence_block(), scope "block"): the thread's next
        atomic releases what it did before to the threads of that scope
        (kernels.trace.record clears that at its next global write), and it acquires
        what its atomics since its last fence read."""
        thread._fenced = scope
        pending = getattr(thread, "_pending", None)
        if pending is not None:
            thread._clock = join(getattr(thread, "_clock", EMPTY), pending)
            thread._pending = None

    def arrive(self, thread, site=None):
        """Before a block barrier (at `site`: its function and line): add this thread's
        clock to the barrier's join."""
        block = (thread.blockIdx.x, thread.blockIdx.y, thread.blockIdx.z)
        key = (block, getattr(thread, "_epoch", 0))
        with self._lock:
            self._barriers[key] = join(self._barriers.get(key, EMPTY),
                                       getattr(thread, "_clock", EMPTY))
            self._arrivals.setdefault(key, {})[thread.thread_id] = site

    def diverged(self):
        """What went wrong at the block barriers, in words: threads of a block that met
        at different barriers (the simulator lets them through together), or a thread
        that passed a barrier with its block and then skipped the next one the others
        wait at (a barrier in a branch). On a GPU either is undefined: it may hang, or
        let threads through early. Threads that leave before the first barrier are not
        counted (a bounds check that returns)."""
        found = []
        for (block, n), arrived in sorted(self._arrivals.items()):
            where = "block " + ",".join(map(str, block[:1] if block[1:] == (0, 0) else block))
            sites = sorted({site for site in arrived.values() if site})
            if len(sites) > 1:
                found.append(f"threads of {where} waited at different barriers together "
                             f"({' and '.join(f'{f}, line {l}' for f, l in sites)})")
                continue
            before = self._arrivals.get((block, n - 1), {})
            skipped = sorted(set(before) - set(arrived))
            if n and skipped:
                f, line = sites[0] if sites else ("?", "?")
                found.append(f"{len(skipped)} thread{'s' if len(skipped) > 1 else ''} of "
                             f"{where} (thread {skipped[0]} first) passed the barrier "
                             f"before with the block but never reached the one at {f}, "
                             f"line {line}, which the other threads waited at")
        return found

    def leave(self, thread):
        """After a block barrier (all arrived): the join, and this barrier passed."""
        block = (thread.blockIdx.x, thread.blockIdx.y, thread.blockIdx.z)
        epoch = getattr(thread, "_epoch", 0)
        joined = self._barriers[(block, epoch)]
        thread._epoch = epoch + 1
        thread._clock = Clock(joined.grid, {**joined.blocks, block: epoch + 1},
                              joined.threads)

    @staticmethod
    def grid_passed(thread):
        """After a grid barrier: everything before it, in every block, is known."""
        thread._grid_epoch = getattr(thread, "_grid_epoch", 0) + 1
        thread._clock = Clock(thread._grid_epoch)

    def atomic(self, thread, address, release, run):
        """Run the atomic `run()` on `address` with what it reads (acquired at the
        thread's next fence) and, if `release`, its release, in one step as the atomic
        itself: returns what run() returns."""
        block = (thread.blockIdx.x, thread.blockIdx.y, thread.blockIdx.z)
        with self._lock:
            old = run()
            clock = getattr(thread, "_clock", EMPTY)
            thread._pending = join(getattr(thread, "_pending", None) or EMPTY,
                                   self._released.get(address, EMPTY),
                                   self._released_in_block.get((address, block), EMPTY))
            if release:
                counter = getattr(thread, "_counter", 0)
                mine = Clock(clock.grid, clock.blocks,
                             {**clock.threads, (block, thread.thread_id): counter})
                released, key = ((self._released_in_block, (address, block))
                                 if release == "block" else (self._released, address))
                released[key] = join(released.get(key, EMPTY), mine)
                thread._counter = counter + 1
            thread._fenced = False
            return old
