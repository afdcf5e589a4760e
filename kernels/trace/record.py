"""Recording: the Recorder that logs every memory access of kernels on the simulator.

While kernels.trace.hooks.recording() is active, the simulator reports to a Recorder:

* array indexing inside a kernel (global arguments and shared arrays) logs a read
  or a write with the block, the thread, the array, the index and the thread's
  barrier count (its *epoch*: how many ``syncthreads`` it has passed);
* ``cuda.atomic.*`` logs one atomic access instead of the read and write inside it,
  and a successful ``cas(mutex, i, 0, v)`` / ``exch(mutex, i, 0)`` takes and
  releases lock ``mutex[i]`` for the accesses in between;
* kernel launches, ``copy_to_device`` / ``copy_to_host``, events and
  synchronisations are logged as operations on streams, so that work on different
  streams can be ordered afterwards (the simulator itself runs everything in order).

The simulator runs one block at a time and the threads of a block as OS threads,
so the order of the log is *an* order, not the GPU's: analyses use it only for what
does not depend on timing.
"""

import bisect
import dis
import functools
import inspect
import itertools
import threading

import numpy as np
from numba.core import types
from numba.cuda.args import ArgHint
from numba.cuda.simulator import kernel
from numba.cuda.simulator.cudadrv import devicearray
from numba.np import numpy_support

from kernels import simulator, simulator_concurrency
from kernels.simulator_concurrency import element_address
from kernels.trace import blocks
from kernels.trace.model import HOST, Access, Launch, Operation, TraceError, TraceTooLarge
from kernels.trace.order import Sync

# Each simulated thread is an OS thread. A cooperative launch runs all its blocks live
# (kernels.trace.blocks); any other runs one block at a time, so it may have many.
MAX_COOPERATIVE_THREADS = 4096
MAX_THREADS = 1 << 16
MAX_ACCESSES = 400_000  # per recording: beyond this the pictures say nothing more
GPU_ONLY = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync",
            "match_any_sync", "match_all_sync", "activemask", "lanemask_lt", "vote_sync_intrinsic",
            "all_sync", "any_sync", "eq_sync")


class _Region:
    def __init__(self, name, space, ary):
        self.name, self.space = name, space
        self.start = ary.__array_interface__["data"][0]
        self.end = self.start + ary.nbytes
        self.shape, self.dtype, self.itemsize = ary.shape, ary.dtype, ary.dtype.itemsize
        root = ary
        while isinstance(root.base, np.ndarray):
            root = root.base
        self.root = root.__array_interface__["data"][0]


    def unravel(self, flat):
        """The index of element number `flat` of the (C-ordered) region."""
        index = []
        for n in reversed(self.shape[1:]):
            flat, i = divmod(flat, n)
            index.append(i)
        index.append(flat)
        return tuple(index[::-1])


def _dim3(d):
    return (d.x, d.y, d.z)


class Recorder:
    """Patches the simulator while active; collects launches and stream operations."""

    def __init__(self):
        self.launches, self.operations = [], []
        self.count = 0  # accesses recorded by the launches before the current one
        self.last = {}  # thread ident -> its latest Access (the atomic that took a lock)
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._regions = ([], [])  # this launch's arrays: (their starts, _Regions), sorted
        self._allocations = {}  # root address -> name, for stream pictures
        # Every array seen, kept until the trace ends: memory freed while recording
        # would be handed to the next array at once, which would then look like the same
        # memory (a GPU's allocator frees lazily, and a free waits for the device).
        self._kept = []
        self._launch = None
        self._streams = {}  # id(stream) -> number; 0 is the default stream
        self._stream_objs = []  # keeps them alive so their ids stay theirs
        self._clocks = {0: {}}
        self._host = {}  # what the host has waited for
        self.device_waits = 0  # cuda.synchronize() calls
        self.sync = Sync()  # this launch's barriers and atomics (kernels.trace.order)

    # ---------------------------------------------------------------- streams
    # Each stream keeps a vector clock (stream -> operations of that stream it has
    # waited for); an operation carries its stream's clock when it was issued.

    def stream_number(self, s):
        """The number of stream object `s`: 0 for the legacy default stream."""
        if s is None or isinstance(s, int) or simulator_concurrency.is_legacy(s):
            return 0
        if id(s) not in self._streams:
            self._streams[id(s)] = len(self._streams) + 1
            self._stream_objs.append(s)
            # a (blocking) stream waits for the work queued on the legacy default stream
            # before it, even when it is first used afterwards
            self._clocks[self._streams[id(s)]] = dict(self._clocks[0])
        return self._streams[id(s)]

    @staticmethod
    def _join(*clocks):
        out = {}
        for c in clocks:
            for k, v in c.items():
                out[k] = max(out.get(k, 0), v)
        return out

    def clock_of(self, stream):
        """What work on `stream` has reached so far (None or 0: every stream's work,
        as the legacy default stream and cuda.synchronize() see it)."""
        s = None if stream is None else self.stream_number(stream)
        return self._join(*self._clocks.values()) if not s else dict(self._clocks[s])

    def host_waits(self, clock):
        """The host waited for `clock`: work it queues from now on comes after it."""
        self._host = self._join(self._host, clock)

    def stream_waits(self, stream, clock):
        """`stream` waits for `clock` (an event) before its next operation."""
        s = self.stream_number(stream)
        self._clocks[s] = self._join(self._clocks[s], clock)

    def _operation(self, what, stream, reads, writes):
        """Queue an operation on stream number `stream`: its clock follows the stream's
        (the default stream 0 waits for every stream, and every stream waits for it)."""
        others = self._clocks.values() if stream == 0 else [self._clocks[stream]]
        clock = self._join(self._host, *others)
        clock[stream] = clock.get(stream, 0) + 1
        self._clocks[stream] = clock
        if stream == 0:
            for s in self._clocks:
                self._clocks[s] = self._join(self._clocks[s], clock)
        op = Operation(next(self._seq), what, stream, clock, reads, writes)
        self.operations.append(op)
        return op

    def copied(self, what, stream, device, nbytes, host=None):
        """A copy in (host to `device`) or out, of its first `nbytes` bytes; a copy out
        into `host` (an array) writes that host memory too, and the host waits for it
        unless it is asynchronous: on a stream, into pinned memory."""
        region = self._name_allocation(device)
        span = [(region.start, region.start + nbytes)]
        if what == "copy in":
            self._operation(what, self.stream_number(stream), [], span)
            return
        into = self._name_allocation(host, "host array")
        into = [(into.start, into.start + nbytes)]
        op = self._operation(what, self.stream_number(stream), span, into)
        if op.stream == 0 or not simulator_concurrency.page_locked(host):
            self.host_waits(op.clock)  # into pageable memory CUDA copies before returning

    def host_reads(self):
        """The host reads every array copied to it (a checker reads what the call
        returns): where a copy may still be running, an operation of the host's, after
        what the host waited for."""
        into = [span for op in self.operations if op.what == "copy out"
                and op.clock[op.stream] > self._host.get(op.stream, 0) for span in op.writes]
        if into:
            self.operations.append(Operation(next(self._seq), "host reads the result", HOST,
                                             {**self._host, HOST: 1}, into, []))

    def _name_allocation(self, ary, kind="device array"):
        self._kept.append(ary)
        region = _Region("", "global", ary)
        if region.root not in self._allocations:
            number = sum(name.startswith(kind) for name in self._allocations.values()) + 1
            self._allocations[region.root] = f"{kind} {number}"
        return region

    def lock_changed(self, thread, change):
        """`thread` took ("take") or released ("release") a lock with its last atomic."""
        if self._launch is not None:
            self._launch.lock_events.append((next(self._seq), self.last[thread.ident],
                                             change))

    # ---------------------------------------------------------------- regions

    def _add_region(self, region):
        regions = sorted(self._regions[1] + [region], key=lambda r: r.start)
        # replaced whole, in one assignment: readers never lock
        self._regions = ([r.start for r in regions], regions)

    def _find(self, address):
        starts, regions = self._regions
        i = bisect.bisect(starts, address) - 1
        while i >= 0:
            region = regions[i]
            if region.start <= address < region.end:
                return region
            i -= 1
        return None

    # --------------------------------------------------------------- accesses

    def record(self, ary, idx, kind, op, frame, value=None, counted=None):
        thread = threading.current_thread()
        if not isinstance(thread, kernel.BlockThread) or getattr(thread, "_quiet", False):
            return
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != ary.ndim or not all(isinstance(i, (int, np.integer)) for i in idx):
            return  # a slice or a field: it makes a view, and the view's accesses count
        idx = tuple(int(i) % n if i < 0 else int(i) for i, n in zip(idx, ary.shape))
        address = ary.__array_interface__["data"][0] + sum(
            i * s for i, s in zip(idx, ary.strides))
        region = self._find(address)
        if region is None:
            return  # not an argument or shared array of this launch (a local array)
        if counted:
            self._counted(region.name, region.space, ary, counted)
        index = region.unravel((address - region.start) // region.itemsize)
        counts = thread.__dict__.setdefault("_sites", {})
        key = (id(frame.f_code), _instruction(frame.f_code, frame.f_lasti))
        k = counts.get(key, 0)
        counts[key] = k + 1
        shared = region.space == "shared"
        clock, counter, grid_epoch, epoch, pending = Sync.state(thread)
        access = Access(
            next(self._seq), _dim3(thread.blockIdx), _dim3(thread.threadIdx),
            thread.thread_id, region.space, region.name, index,
            address - region.start if shared else address,
            address - (region.start if shared else region.root),
            region.dtype.itemsize, kind, op, epoch,
            frozenset(getattr(thread, "_locks", ())), (key[0], key[1], k),
            grid_epoch, counter, clock, pending, value)
        # No lock: a dict item and a list append are single steps under the GIL, and
        # the threads would queue for it on every access.
        self.last[thread.ident] = access
        if kind == "write" and not shared:
            thread._fenced = False  # a fence orders only the writes made before it
        accesses = self._launch.accesses
        accesses.append(access)
        if self.count + len(accesses) > MAX_ACCESSES:
            raise TraceTooLarge(
                f"more than {MAX_ACCESSES:,} memory accesses recorded: trace a smaller "
                "input or a smaller launch (a few blocks of a few dozen threads show "
                "the pattern)")

    # ----------------------------------------------------------------- launch

    def run_kernel(self, original, dispatcher, stream, args):
        """Launch `dispatcher` (configured) on `stream` through the simulator's own
        launch `original`, recording its arrays and accesses."""
        fn = dispatcher.fn
        grid, block = dispatcher.grid_dim, dispatcher.block_dim
        threads = int(np.prod(grid)) * int(np.prod(block))
        cooperative = blocks.uses_grid_sync(fn)
        most = MAX_COOPERATIVE_THREADS if cooperative else MAX_THREADS
        if threads > most:
            raise TraceTooLarge(
                f"{fn.__name__}[{grid}, {block}] launches {threads:,} threads; the tracer "
                f"accepts at most {most:,}" + (" in a cooperative launch, whose blocks "
                "all run at once (each thread is an OS thread on the simulator)"
                if cooperative else "") + ". Pass a smaller input or fewer blocks: a "
                "few blocks show the pattern")
        gpu_only = sorted(set(fn.__code__.co_names) & set(GPU_ONLY))
        if gpu_only:
            raise TraceError(f"{fn.__name__} calls cuda.{gpu_only[0]}, a warp-level "
                             "primitive the simulator lacks: it needs a real GPU, and the "
                             "tracer cannot run it")
        try:  # as a launch binds them: a kernel of another signature must not run here
            inspect.signature(fn).bind(*args)
        except TypeError as err:
            raise TypeError(f"{fn.__name__}(): {err}") from None
        names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        wrapped, arrays, reads, writes = [], {}, [], []
        narrow = []  # integer arrays of fewer than 32 bits: their largest value is kept
        self._regions = ([], [])
        for name, arg in zip(names, args):
            if isinstance(arg, ArgHint):
                arg = arg.value  # cuda.In(x) and the like: the kernel works on x
            if isinstance(arg, np.ndarray) and arg.ndim > 0:
                arg = devicearray.FakeCUDAArray(arg)  # in place: the caller sees the writes
            if isinstance(arg, devicearray.FakeCUDAArray):
                ary = arg._ary
                if not (ary.flags.c_contiguous or ary.size <= 1):
                    raise TraceError(f"argument {name} of {fn.__name__} is not C-contiguous;"
                                     " the tracer maps addresses back to indices only for "
                                     "contiguous arrays")
                region = _Region(name, "global", ary)
                self._name_allocation(ary)
                same = self._find(region.start) if ary.size else None
                arrays[name] = {"space": "global", "shape": ary.shape, "dtype": ary.dtype,
                                "same_as": same.name if same else None,
                                "allocation": region.root}
                if ary.dtype.kind in "iu" and ary.dtype.itemsize < 4 and ary.size:
                    narrow.append((name, ary))
                if same is None:
                    self._add_region(region)
            wrapped.append(arg)
        self._launch = Launch(len(self.launches), fn.__name__, tuple(grid), tuple(block),
                              self.stream_number(stream), arrays, cooperative=cooperative)
        self.count = sum(len(launch.accesses) for launch in self.launches)
        self.launches.append(self._launch)
        self.sync = Sync()
        try:
            if cooperative:  # every block live: grid.sync() is a barrier across blocks
                blocks.run_all_blocks(dispatcher, wrapped, Sync.grid_passed)
            else:
                original(dispatcher, *wrapped)
        except AttributeError as err:
            if "FakeCUDAModule" in str(err):
                raise TraceError(f"{fn.__name__} uses something the simulator lacks "
                                 f"({err}); it needs a real GPU") from None
            raise
        for name, ary in narrow:  # a count there overflows past sizes a trace can run
            arrays[name]["largest"] = int(ary.max())
        for a in self._launch.accesses:
            if a.space == "global":
                (writes if a.kind != "read" else reads).append((a.address, a.address + a.itemsize))
        op = self._operation(f"kernel {fn.__name__}", self.stream_number(stream), reads, writes)
        self._launch.clock = op.clock
        self._launch.diverged = self.sync.diverged()

    def _counted(self, name, space, ary, value):
        """A narrow integer array's element was counted up to `value` (incremented)."""
        info = self._launch.arrays.setdefault(name, {"space": space, "shape": ary.shape,
                                                     "dtype": ary.dtype})
        info["counted"] = max(info.get("counted", 0), value)

    def local_array(self, ary, frame):
        """A thread's local array: one of integers of fewer than 32 bits reports the
        counts kept in it (_Counts)."""
        if ary.dtype.kind not in "iu" or ary.dtype.itemsize >= 4:
            return ary
        name = _assigned_name(frame.f_code, frame.f_lasti) or f"local@{frame.f_lineno}"
        counts = ary.view(_Counts)
        counts.report = functools.partial(self._counted, name, "local", ary)
        return counts

    def shared_array(self, original, shared, shape, dtype, alignment, frame):
        line = frame.f_code.co_filename, frame.f_lineno
        name = _assigned_name(frame.f_code, frame.f_lasti)
        if name is None:
            text = _source_line(*line)
            name = text.split("=")[0].strip() if "=" in text else f"shared@{line[1]}"
        with self._lock:  # the array and its region appear together to other threads
            if shape == 0 or alignment is not None:  # dynamic memory, or refused
                ary = original(shared, shape, dtype, alignment)
                new = self._find(ary.__array_interface__["data"][0]) is None
            else:
                # One allocation per source line of the kernel, as the simulator
                # makes, and per block: a cooperative launch runs its blocks together.
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                key = (*line, _dim3(threading.current_thread().blockIdx))
                new = key not in shared._allocations
                if new:  # fresh memory holds garbage, as on a GPU
                    shared._allocations[key] = simulator.garbage(shape, dtype)
                ary = shared._allocations[key]
            if new:
                self._add_region(_Region(name, "shared", ary))
            self._launch.arrays.setdefault(name, {"space": "shared", "shape": ary.shape,
                                                  "dtype": ary.dtype})
        return devicearray.FakeWithinKernelCUDAArray(devicearray.FakeCUDAArray(ary))


def _narrow(ary):
    return ary.dtype.kind in "iu" and ary.dtype.itemsize < 4


def read_from(ary, idx, value):
    """The current thread read `value` from ary[idx]: kept, where `ary` holds integers of
    fewer than 32 bits, for `incremented`."""
    if _narrow(ary) and np.ndim(value) == 0:
        try:
            threading.current_thread()._trace_read = (element_address(ary, idx), int(value))
        except (TypeError, ValueError, IndexError):
            pass  # a slice or a field: not one element


def incremented(ary, idx, value):
    """The count that storing `value` in ary[idx] makes, where `ary` holds integers of
    fewer than 32 bits and the store adds 1 to what the same thread last read there (a
    count kept there wraps past 127, 255 or 32,767: kernels.checks.points.wide_counts);
    else None. A byte staged from the input is no count, whatever its value."""
    if not _narrow(ary):
        return None
    last = getattr(threading.current_thread(), "_trace_read", None)
    try:
        if last is None or last[0] != element_address(ary, idx):
            return None
        new = int(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # a slice, or not a number
    return new if new == last[1] + 1 else None


class _Counts(np.ndarray):
    """A local array of narrow integers under the tracer: reports each count kept in it."""

    def __getitem__(self, idx):
        value = super().__getitem__(idx)
        read_from(self, idx, value)
        return value

    def __setitem__(self, idx, value):
        counted = incremented(self, idx, value)
        super().__setitem__(idx, value)
        if counted:
            self.report(counted)


@functools.lru_cache(maxsize=None)
def _offsets(code):
    return [i.offset for i in dis.get_instructions(code)]


def _instruction(code, lasti):
    """The offset of the instruction at `lasti`. Python 3.11 reports a specialised
    instruction's offset past its inline cache, so the same access can show two
    different f_lasti values in two threads."""
    offsets = _offsets(code)
    return offsets[bisect.bisect(offsets, lasti) - 1]


@functools.lru_cache(maxsize=4096)  # every thread of every block asks it of one line
def _assigned_name(code, lasti):
    """The variable the value being made at `lasti` is stored in (tile in
    ``tile = cuda.shared.array(...)``): read from the bytecode, so code without a
    source file (a grader's cell) names its shared arrays too."""
    after = lasti  # past a jump forward too: the end of a branch of `x = a if c else b`
    for instruction in dis.get_instructions(code):
        if instruction.offset <= after or instruction.opname.startswith(("CACHE", "NOP")):
            continue
        if instruction.opname == "JUMP_FORWARD":
            after = instruction.argval - 1
            continue
        if instruction.opname in ("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"):
            return instruction.argval
        return None
    return None


def _source_line(filename, lineno):
    import linecache

    return linecache.getline(filename, lineno).strip()
