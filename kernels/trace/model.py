"""What a trace holds: accesses, launches, stream operations, and the tracer's errors.

Plain data, so that a trace made in another process (on a GPU machine, the tracer
runs on the simulator in a child process) comes back by pickling.
"""

import dataclasses

import numpy as np


class TraceError(RuntimeError):
    """The tracer cannot give a true picture of this call; the message says why."""


class TraceTooLarge(TraceError):
    """The launch or the recording is too large to trace in reasonable time."""


class LockNeverFree(TraceTooLarge):
    """The recording grew too large while the threads spun on a lock that never became
    free (kernels.trace.hazards.stuck_lock)."""


class NothingLaunched(TraceError):
    """The traced call launched no kernel."""


class ProcessEnded(TraceError):
    """The simulator process tracing the call (kernels.trace.remote) ended without a
    result: the traced code ended it, or it was killed (the message says how)."""


@dataclasses.dataclass(frozen=True)
class Access:
    seq: int  # order in the recording
    block: tuple  # (x, y, z)
    thread: tuple  # (x, y, z)
    tid: int  # linear thread index in its block: x + X * (y + Y * z)
    space: str  # "global" or "shared"
    array: str  # the kernel's parameter name, or the shared array's variable name
    index: tuple  # index into that array
    address: int  # byte address (global: absolute; shared: offset in the array)
    sector_base: int  # byte offset from the start of the allocation (for 32-byte sectors)
    itemsize: int
    kind: str  # "read", "write" or "atomic"
    op: str  # "read", "write" or the atomic's name ("add", "cas", ...)
    epoch: int  # barriers this thread has passed in this launch
    locks: frozenset  # addresses of the locks this thread holds
    site: tuple  # (code, bytecode offset, k): the k-th time this thread ran this access
    grid_epoch: int = 0  # grid barriers this thread has passed
    counter: int = 0  # releases this thread has made (kernels.trace.order)
    clock: object = None  # what the thread knew had happened before (order.Clock)
    # what its atomics since its last fence read from releases, which it knows only
    # after a fence (order.Sync.fence); None: no atomic since its last fence
    pending: object = None
    # a write's value as stored, as an int64 (its bytes, or a digest of more than 8):
    # writes of one value by many threads (a flag set to 1) do not race
    value: object = None

    @property
    def warp(self):
        return self.tid // 32

    @property
    def lane(self):
        return self.tid % 32

    def who(self):
        """'block (1,0,0) thread (3,0,0)' trimmed to the launch's dimensions."""
        return f"block {dim3_text(self.block)} thread {dim3_text(self.thread)}"


def index_text(ix):
    """(3, 4) -> "3, 4": an element's index as it is written between brackets."""
    return ", ".join(str(i) for i in ix)


def dim3_text(dim3):
    """(3, 0, 0) -> "3", (3, 1, 0) -> "(3,1)": as many dimensions as the launch uses."""
    x, y, z = dim3
    return f"{x}" if (y, z) == (0, 0) else f"({x},{y})" if z == 0 else f"({x},{y},{z})"


@dataclasses.dataclass
class Launch:
    """One kernel launch: its configuration, arrays and accesses."""
    number: int  # launches before it in the recording
    kernel: str
    grid: tuple
    block: tuple
    stream: int
    # name -> {"space" ("global", "shared" or "local": a thread's own array, listed only
    # where it keeps counts), "shape", "dtype"; global: "same_as", "allocation"; global
    # integers of fewer than 32 bits: "largest", their largest value after the launch;
    # integers of fewer than 32 bits, any space: "counted", the largest count an
    # increment by 1 stored there}
    arrays: dict
    accesses: list = dataclasses.field(default_factory=list)
    lock_events: list = dataclasses.field(default_factory=list)  # (seq, Access, "take"/"release")
    clock: dict = dataclasses.field(default_factory=dict)  # stream clock when it ran
    cooperative: bool = False  # it calls grid.sync(): all blocks ran live
    # threads of a block that did not meet at the same barrier, in words (order.Sync)
    diverged: list = dataclasses.field(default_factory=list)

    def of(self, array, kinds=("read", "write", "atomic")):
        """The accesses to `array` of the given kinds, in recorded order. An argument
        passed twice (the same memory as an earlier one) is recorded under the first
        one's name."""
        if array not in self.arrays:
            raise KeyError(f"{self.kernel} has no array named {array!r}; its arrays: "
                           f"{', '.join(self.arrays)}")
        array = self.arrays[array].get("same_as") or array
        return [a for a in self.accesses if a.array == array and a.kind in kinds]

    @property
    def threads_per_block(self):
        return int(np.prod(self.block))


HOST = -1  # the stream number of the host's own reads of what was copied to it


@dataclasses.dataclass
class Operation:
    """Work queued on a stream: a copy or a kernel, with the memory it touches (device
    bytes; a copy out also writes host bytes, which the host reads at the end)."""
    seq: int
    what: str  # "copy in", "copy out", "kernel <name>" or "host reads the result"
    stream: int  # 0: the legacy default stream; HOST: the host
    clock: dict  # vector clock: stream -> operations of that stream this one follows
    reads: list  # [(start, end)] device byte ranges
    writes: list


@dataclasses.dataclass
class Trace:
    launches: list
    operations: list
    regions: dict  # allocation start address -> a readable name
    device_waits: int = 0  # cuda.synchronize() calls: the host waited for every stream

    def launch(self, kernel=None):
        """The launch of `kernel` (a name); without one, the last launch."""
        if kernel is None:
            return self.launches[-1]
        found = [l for l in self.launches if l.kernel == kernel]
        if not found:
            raise KeyError(f"no launch of {kernel!r}; launched: "
                           f"{', '.join(l.kernel for l in self.launches)}")
        return found[-1]
