"""What kind of race two accesses make, and the fix that fits it, in words.

kernels.trace.hazards finds the races; this module says what is missing between the
two accesses of each, from what the two threads did to the element (and, for a swap,
to the element it was swapped with), so that the advice names one fix, not a list:

* each thread reads the element and writes it back: a lost update, made atomic;
* two threads swap the same pair (each reads both elements, then writes both): the
  pair is swapped twice, and the loop's bound must give each pair to one thread;
* a write announced by an atomic that the reading thread saw before its read, or
  made under a lock both threads held: the fence (cuda.threadfence()) is missing
  between the write and the atomic (before the release), or between the reader's
  atomic and its read (after taking the lock), or both;
* one thread writes, another only reads: the read needs a barrier after the write
  (the block's, the grid's, or the end of the launch between blocks), unless both ran
  the same read of that one element and the writer wrote after it (a check, then an
  update, as a running maximum does): that needs a lock, or one atomic;
* both only write: each element needs one writer;
* a plain access beside atomic ones, or accesses under different locks.
"""

import collections

from kernels.trace import order

SYNCTHREADS = "a block barrier (cuda.syncthreads())"
GRID_SYNC = "a grid barrier (grid.sync())"


class Fixes:
    """The fix for each race of one launch: `why(a, b)` for racing accesses a and b."""

    def __init__(self, launch):
        self.launch = launch
        self._by_thread = None  # (block, tid, array) -> that thread's accesses to it
        self._by_site = None  # (array, code, offset) -> the elements read there
        self._atomics = None  # (block, tid) -> that thread's atomics, in the order they ran

    def _accesses(self, access):
        """The accesses of `access`'s thread to its array, in the order they ran."""
        if self._by_thread is None:
            self._by_thread = collections.defaultdict(list)
            for a in self.launch.accesses:
                self._by_thread[(a.block, a.tid, a.array)].append(a)
        return self._by_thread[(access.block, access.tid, access.array)]

    def _read_then_write(self, access):
        """Whether `access`'s thread read the element and then wrote it with no barrier
        between (a read-modify-write; a read after a barrier is no part of the update)."""
        mine = [x for x in self._accesses(access) if x.index == access.index]
        return any(r.kind == "read" and w.kind == "write" and r.seq < w.seq
                   and (r.epoch, r.grid_epoch) == (w.epoch, w.grid_epoch)
                   for r in mine for w in mine)

    def why(self, a, b):
        """(in words, in a few words): what is missing between racing accesses a and b,
        as the end of the sentence "... both touch x[3] ..." (hazards.Race.describe)."""
        if a.locks & b.locks:
            return _lock_fences(a, b)
        if a.locks or b.locks:
            if not (a.locks and b.locks):
                return ("and only one of them holds the lock that guards it: every access "
                        "to it needs that lock", "the lock, held by both")
            return ("holding different locks: every access to it needs the same lock",
                    "one lock, held by both")
        apart = "" if a.block == b.block else "from different blocks, "
        if "atomic" in (a.kind, b.kind):
            return self._beside_atomic(a, b, apart)
        for writer, reader in ((a, b), (b, a)):
            if writer.kind == "write" and reader.kind == "read" and self._unfenced(writer,
                                                                                 reader):
                return _announced(writer, reader, apart)
        did = [{x.kind for x in self._accesses(t) if x.index == t.index} for t in (a, b)]
        writers = sum("write" in d for d in did)
        if writers == 2 and all(map(self._read_then_write, (a, b))):
            pair = self._pair(a, b)
            if pair is not None:
                return (f"{apart}and both also read and write {a.array}[{pair}]: they "
                        "swap the same pair, so it is swapped twice, in an order a GPU "
                        "does not fix. Each pair needs one thread: bound the loop so that "
                        "no two threads take the same pair (to reverse, stop at the "
                        "middle, n // 2)", "one thread per pair (the loop's bound)")
            return (f"{apart}and each reads it, then writes it back, so one thread's "
                    "update can overwrite the other's: a lost update. Make the update "
                    "one atomic operation (cuda.atomic.add, or another cuda.atomic "
                    "function), or hold a lock around it",
                    "an atomic update (cuda.atomic.add) or a lock around it")
        if writers == 2:
            return (f"{apart}and both write it, so one write is lost, and which one "
                    "depends on timing: each element needs one writer (check the "
                    "indices, and the loop's bound)", "one writer per element")
        writer, reader = (a, b) if "write" in did[0] else (b, a)
        if self._check_then_update(writer, reader):
            return (f"{apart}and each reads it to decide whether to write it, so another "
                    "thread's update can come between the check and the write and be "
                    "lost: make the check and the update one step, under a lock (or one "
                    "atomic, such as cuda.atomic.max)",
                    "a lock around the check and the update, or one atomic")
        return self._read_and_write(a, b, apart)

    def _check_then_update(self, writer, reader):
        """Whether the reader's read is one the writer made too, before its write, at a
        place of the code that reads this one element only (best = peak[0], not a
        tile's element k): the two run the same update, a check and then a write."""
        if self._by_site is None:
            self._by_site = collections.defaultdict(set)
            for x in self.launch.accesses:
                if x.kind == "read":
                    self._by_site[(x.array, *x.site[:2])].add(x.index)
        site = reader.site[:2]
        if reader.kind != "read" or self._by_site[(reader.array, *site)] != {reader.index}:
            return False
        return any(x.kind == "read" and x.site[:2] == site and x.seq < writer.seq
                   for x in self._accesses(writer) if x.index == writer.index)

    def _read_and_write(self, a, b, apart):
        """One thread writes the element, the other only reads it: a barrier between."""
        if not apart:
            return ("with no block barrier (cuda.syncthreads()) between the write and the "
                    "read, so the read may come before the write: put cuda.syncthreads() "
                    "between them, where every thread of the block reaches it",
                    SYNCTHREADS)
        if self.launch.cooperative:
            return ("from different blocks, with no grid barrier (grid.sync()) between the "
                    "write and the read (cuda.syncthreads() waits for one block only): put "
                    "grid.sync() between them", GRID_SYNC)
        return ("from different blocks, with no atomic and no lock, and blocks cannot wait "
                "for each other in an ordinary launch (cuda.syncthreads() waits for one "
                "block only): end the launch between the write and the read (a second "
                "kernel), or launch cooperatively and put grid.sync() between them",
                "the end of the launch, or a grid barrier (grid.sync())")

    def _beside_atomic(self, a, b, apart):
        plain = b if a.kind == "atomic" else a
        writes = any(x.kind == "write" and x.index == plain.index
                     for x in self._accesses(plain))
        if writes:
            return (f"{apart}and only one of them is atomic: a plain write beside atomic "
                    "updates can undo them, so make it atomic too", "an atomic for both")
        if not apart:
            return ("with no block barrier (cuda.syncthreads()) between the atomic and the "
                    "read, so the read may come before the atomic: put cuda.syncthreads() "
                    "between them", SYNCTHREADS)
        if self.launch.cooperative:
            return ("from different blocks, with no grid barrier (grid.sync()) between the "
                    "atomic and the read: put grid.sync() between them", GRID_SYNC)
        return ("from different blocks: the read may come before the other block's atomic, "
                "and blocks cannot wait for each other in an ordinary launch: read the "
                "value after the launch, or use the value the atomic returns",
                "the end of the launch, or the atomic's returned value")

    def _unfenced(self, writer, reader):
        """Whether the writer made an atomic after its write that the reader's thread
        followed with an atomic on the same element before its read: the chain that
        fences would turn into an order (kernels.trace.order)."""
        if self._atomics is None:
            self._atomics = collections.defaultdict(list)
            for x in self.launch.accesses:
                if x.kind == "atomic":
                    self._atomics[(x.block, x.tid)].append(x)
        announced = [x for x in self._atomics[(writer.block, writer.tid)] if x.seq > writer.seq]
        seen = [x for x in self._atomics[(reader.block, reader.tid)] if x.seq < reader.seq]
        return any((x.array, x.index) == (y.array, y.index) and x.seq < y.seq
                   for x in announced for y in seen)

    def _pair(self, a, b):
        """The other element of a pair both threads swap, as text, or None: an element
        of the same array that each thread also reads and writes, where each thread
        reads both elements before it writes either."""
        mine = [self._accesses(t) for t in (a, b)]
        common = set.intersection(*({x.index for x in m if x.kind == "write"} &
                                    {x.index for x in m if x.kind == "read"} for m in mine))
        for other in sorted(common - {a.index}):
            if all(_swapped(m, a.index, other) for m in mine):
                return ", ".join(str(i) for i in other)
        return None


def _lock_fences(a, b):
    """The fence missing around a lock both accesses were made under: the later
    holder's after taking it (order.after_a_fence), the earlier holder's before
    releasing it (the later one fenced after its atomic), or both."""
    first, second = sorted((a, b), key=lambda x: x.seq)
    if order.after_a_fence(first, second):
        return ("both holding the same lock, but the later holder did not fence after "
                "taking it, so its accesses to the data it guards may be performed before "
                "the lock is its own, or read a stale copy of it: put a fence after "
                "taking the lock, cuda.threadfence() right after the atomic that takes it "
                "(as kernels.locks.lock does)", "a fence after taking the lock "
                "(cuda.threadfence())")
    if second.pending is None:
        return ("both holding the same lock, but the earlier holder released it without a "
                "fence, so the next holder may not see its writes: put cuda.threadfence() "
                "before the atomic that releases the lock (as kernels.locks.unlock does)",
                "a fence before releasing the lock (cuda.threadfence())")
    return ("both holding the same lock, but a lock orders the accesses it guards only "
            "with fences: put cuda.threadfence() before the atomic that releases the lock, "
            "and after the one that takes it (a fence after taking the lock)",
            "a fence (cuda.threadfence()) on each side of the lock")


def _announced(writer, reader, apart):
    """A write announced by an atomic that the reader's thread saw before its read:
    the fence missing is the writer's (before its atomic), the reader's (after its
    own), or both."""
    if order.after_a_fence(writer, reader):
        return (f"{apart}and the write is announced by an atomic that the reading thread "
                "sees before its read, but that thread did not fence after its atomic, so "
                "the read may be performed early or from a stale copy: put "
                "cuda.threadfence() after that atomic, before the read (where the atomic "
                "takes a lock: a fence after taking the lock)",
                "a fence (cuda.threadfence()) after the atomic, before the read")
    if reader.pending is None:
        return (f"{apart}and the write is announced by an atomic that the reading thread "
                "sees before its read, but without a fence the read may still miss the "
                "write: put cuda.threadfence() between the write and that atomic",
                "a fence (cuda.threadfence()) before the atomic")
    return (f"{apart}and the write is announced by an atomic that the reading thread sees "
            "before its read, but without fences the read may still miss the write: put "
            "cuda.threadfence() between the write and that atomic, and another between the "
            "reading thread's atomic and its read",
            "a fence (cuda.threadfence()) before the atomic, and one after the reader's")


def _swapped(accesses, first, second):
    """Whether these accesses read `first` and `second`, then write them: every read of
    the two comes before every write, in a stretch where one thread swaps them."""
    both = [x for x in accesses if x.index in (first, second)]
    for start, x in enumerate(both):
        if x.kind != "read":
            continue
        stretch = both[start:start + 4]
        kinds = [(y.kind, y.index) for y in stretch]
        if (sorted(kinds) == sorted([("read", first), ("read", second),
                                     ("write", first), ("write", second)])
                and [k for k, _ in kinds] == ["read", "read", "write", "write"]):
            return True
    return False
