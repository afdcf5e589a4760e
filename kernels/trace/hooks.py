"""The simulator hooks: while recording() is active, the Numba CUDA simulator's array
indexing, atomics, barriers, shared arrays, launches, copies, streams and events
report to a Recorder. Outside it the simulator is exactly as Numba ships it.
"""

import contextlib
import hashlib
import sys
import threading

import numpy as np
from numba.cuda.simulator import api, kernel, kernelapi
from numba.cuda.simulator.cudadrv import devicearray, devices, driver

from kernels import simulator
from kernels.simulator_concurrency import element_address, yield_if_spinning
from kernels.trace import blocks, hazards
from kernels.trace.model import LockNeverFree, NothingLaunched, Trace, TraceError, TraceTooLarge
from kernels.trace.record import Recorder, incremented, read_from

_active = None  # the Recorder of the recording in progress, if any


def _patches(rec):
    """(object, attribute, replacement) for every simulator hook."""
    FW = devicearray.FakeWithinKernelCUDAArray
    get0, set0 = FW.__getitem__, FW.__setitem__

    def getitem(self, idx):
        rec.record(self._item._ary, idx, "read", "read", sys._getframe(1))
        value = get0(self, idx)
        read_from(self._item._ary, idx, value)
        return value

    def setitem(self, idx, val):
        ary = self._item._ary
        counted = incremented(ary, idx, val)
        rec.record(ary, idx, "write", "write", sys._getframe(1), _stored(ary, val), counted)
        return set0(self, idx, val)

    def atomic(name, method):
        def wrapper(self, array, *args):
            index = (0,) * len(array.shape) if name == "compare_and_swap" else args[0]
            ary = array._item._ary if isinstance(array, FW) else array
            thread = threading.current_thread()
            frame = sys._getframe(1)
            address = element_address(ary, index)
            # a release only after a fence: an atomic alone (the exch that frees a lock
            # included) orders no other memory access in CUDA's memory model
            releases = getattr(thread, "_fenced", False)

            def run():  # recorded in the order the atomics run (kernels.trace.order)
                rec.record(ary, index, "atomic", name, frame)
                thread._quiet = True
                try:
                    return method(self, array, *args)
                finally:
                    thread._quiet = False

            old = rec.sync.atomic(thread, address, releases, run)
            yield_if_spinning(name, args, old, address)
            change = _track_lock(thread, name, address, args, old)
            if change:
                rec.lock_changed(thread, change)
            return old
        return wrapper

    def syncthreads(self):
        frame = sys._getframe(2)  # the kernel's, past the simulator's cuda.syncthreads
        rec.sync.arrive(self, (frame.f_code.co_name, frame.f_lineno))
        sync0(self)
        rec.sync.leave(self)

    def grid_sync(self):
        ctx = kernel._get_kernel_context()
        barrier = getattr(ctx, "_trace_grid_barrier", None)
        if barrier is None:  # not started as cooperative (kernels.trace.blocks)
            raise TraceError("grid.sync() in a kernel the tracer did not recognise as "
                             "cooperative (it names this_grid nowhere the tracer looks): "
                             "call cuda.cg.this_grid() in the kernel or a device function "
                             "it calls")
        barrier.wait()
        ctx._trace_on_grid_sync(threading.current_thread())

    def threadfence(self):
        rec.sync.fence(threading.current_thread())

    def threadfence_block(self):
        rec.sync.fence(threading.current_thread(), scope="block")

    def cooperative_limit(self, blockdim):
        return blocks.COOPERATIVE_BLOCKS  # the tracer runs them all live

    def launch(self, configuration):
        get_config(self, configuration)
        self._trace_stream = configuration[2] if len(configuration) > 2 else 0
        return self

    def call(self, *args):
        if self._device or kernel._kernel_context is not None:
            return call0(self, *args)
        stream = getattr(self, "_trace_stream", 0)
        self._trace_stream = 0
        return rec.run_kernel(call0, self, stream, args)

    def shared(self, shape, dtype, alignment=None):
        return rec.shared_array(shared0, self, shape, dtype, alignment, sys._getframe(1))

    def local(self, shape, dtype, alignment=None):
        return rec.local_array(local0(self, shape, dtype, alignment), sys._getframe(1))

    def copy_to_device(self, ary, stream=0):
        out = to_dev0(self, ary, stream=stream)
        rec.copied("copy in", stream, self._ary, self._ary.nbytes)
        return out

    def to_device(ary, stream=0, copy=True, to=None):
        out = to_device0(ary, stream=stream, copy=copy, to=to)
        if to is None and copy:  # into `to`, copy_to_device records the copy
            rec.copied("copy in", stream, out._ary, out._ary.nbytes)
        return out

    def copy_to_host(self, ary=None, stream=0):
        out = to_host0(self, ary, stream=stream)
        rec.copied("copy out", stream, self._ary, self._ary.nbytes, out)
        return out

    def host_to_device(dst, src, size, stream=0):
        h2d0(dst, src, size, stream)
        if not isinstance(dst, devicearray.FakeCUDAArray):
            return  # the simulator's device_to_host copies through this function
        rec.copied("copy in", stream, dst._ary, size)

    def device_to_host(dst, src, size, stream=0):
        d2h0(dst, src, size, stream)
        rec.copied("copy out", stream, src._ary, size, dst)

    def stream_sync(self):
        stream_sync0(self)
        rec.host_waits(rec.clock_of(self))

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self
        stream_sync(self)

    def device_sync():
        device_sync0()
        rec.device_waits += 1
        rec.host_waits(rec.clock_of(None))

    def event_record(self, stream=0):
        record0(self, stream)
        self._trace_clock = rec.clock_of(stream)

    def event_wait(self, stream=0):
        wait0(self, stream)
        rec.stream_waits(stream, getattr(self, "_trace_clock", {}))

    def event_sync(self):
        event_sync0(self)
        rec.host_waits(getattr(self, "_trace_clock", {}))

    def event_query(self):  # done, on the simulator: the host knows it waited for it
        event_sync(self)
        return True

    def stream_query(self):
        stream_sync(self)
        return True

    def context_sync(self):
        device_sync()

    sync0 = kernel.BlockThread.syncthreads
    to_device0 = devicearray.to_device
    get_config, call0 = kernel.FakeCUDAKernel.__getitem__, kernel.FakeCUDAKernel.__call__
    shared0, local0 = kernelapi.FakeCUDAShared.array, kernelapi.FakeCUDALocal.array
    to_dev0 = devicearray.FakeCUDAArray.copy_to_device
    to_host0 = devicearray.FakeCUDAArray.copy_to_host
    h2d0, d2h0 = driver.host_to_device, driver.device_to_host
    stream_sync0, device_sync0 = api.stream.synchronize, api.synchronize
    record0, wait0, event_sync0 = api.Event.record, api.Event.wait, api.Event.synchronize
    patches = [
        (FW, "__getitem__", getitem), (FW, "__setitem__", setitem),
        (kernel.BlockThread, "syncthreads", syncthreads),
        (kernelapi.GridGroup, "sync", grid_sync),
        (kernel.FakeOverload, "max_cooperative_grid_blocks", cooperative_limit),
        (kernelapi.FakeCUDAModule, "threadfence", threadfence),
        (kernelapi.FakeCUDAModule, "threadfence_system", threadfence),
        (kernelapi.FakeCUDAModule, "threadfence_block", threadfence_block),
        (devicearray, "to_device", to_device),
        (kernel.FakeCUDAKernel, "__getitem__", launch),
        (kernel.FakeCUDAKernel, "__call__", call),
        (kernelapi.FakeCUDAShared, "array", shared),
        (kernelapi.FakeCUDALocal, "array", local),
        (devicearray.FakeCUDAArray, "copy_to_device", copy_to_device),
        (devicearray.FakeCUDAArray, "copy_to_host", copy_to_host),
        (driver, "host_to_device", host_to_device),
        (driver, "device_to_host", device_to_host),
        (api.stream, "synchronize", stream_sync),
        (api.stream, "auto_synchronize", auto_synchronize),
        (api, "synchronize", device_sync),
        (api.Event, "record", event_record),
        (api.Event, "wait", event_wait),
        (api.Event, "synchronize", event_sync),
        (api.Event, "query", event_query),
        (api.stream, "query", stream_query),
        (devices.FakeCUDAContext, "synchronize", context_sync),
    ]
    for name in ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min",
                 "nanmax", "nanmin", "compare_and_swap", "cas"):
        patches.append((kernelapi.FakeCUDAAtomic, name,
                        atomic(name, getattr(kernelapi.FakeCUDAAtomic, name))))
    return patches


def _stored(ary, value):
    """The value an element of `ary` holds once `value` is stored in it, as an int64:
    its bytes, or a digest of them past 8 bytes; None if it cannot be told."""
    try:
        stored = np.asarray(value).astype(ary.dtype, casting="unsafe")
    except (TypeError, ValueError, OverflowError):
        return None
    if stored.ndim:  # a slice's value: its elements' writes are recorded one by one
        return None
    raw = stored.tobytes()
    if len(raw) > 8:
        raw = hashlib.blake2b(raw, digest_size=8).digest()
    return int.from_bytes(raw.ljust(8, b"\0"), "little", signed=True)


def _track_lock(thread, name, address, args, old):
    """A successful cas(m, i, 0, v != 0) takes lock m[i]; exch(m, i, 0) releases it.
    Returns "take", "release" or None."""
    if name not in ("cas", "exch"):
        return None
    locks = thread.__dict__.setdefault("_locks", set())
    if name == "cas" and old == args[1] == 0 and args[2] != 0:
        locks.add(address)
        return "take"
    if name == "exch" and args[1] == 0 and address in locks:
        locks.discard(address)
        return "release"
    return None


@contextlib.contextmanager
def recording():
    """Patch the simulator for the duration; yield the Recorder."""
    global _active
    from numba import cuda

    if _active is not None:
        raise TraceError("a trace is already being recorded; traces do not nest")
    rec = Recorder()
    patches = _patches(rec)
    saved = [(obj, attr, obj.__dict__[attr]) for obj, attr, _ in patches]
    # the names the course's code calls, bound in numba.cuda when it was imported
    public = {"synchronize": api, "to_device": devicearray, "default_stream": api,
              "legacy_default_stream": api}
    saved_public = {name: getattr(cuda, name) for name in public}
    _active = rec
    for obj, attr, new in patches:
        setattr(obj, attr, new)
    for name, home in public.items():
        setattr(cuda, name, getattr(home, name))
    try:
        with simulator.every_thread_its_own():  # the threads' interleavings are traced
            yield rec
    finally:
        for obj, attr, old in saved:
            setattr(obj, attr, old)
        for name, value in saved_public.items():
            setattr(cuda, name, value)
        _active = None


def given(stream):
    """In a recording, number `stream` now: the first stream so given is stream 1 (a
    checker's given stream, whatever streams the answer makes before using it)."""
    if _active is not None:
        _active.stream_number(stream)


def record(fn, args, kwargs):
    """Call fn(*args, **kwargs) with every kernel launch recorded; the Trace."""
    with recording() as rec:
        try:
            fn(*args, **kwargs)
        except TraceTooLarge as err:  # said as the likely cause where it was a lock's spin
            stuck = hazards.stuck_lock(rec.launches[-1]) if rec.launches else ""
            if stuck and not isinstance(err, LockNeverFree):
                raise LockNeverFree(stuck) from err
            raise
        rec.host_reads()
    if not rec.launches:
        raise NothingLaunched(f"{getattr(fn, '__name__', fn)} launched no kernel: nothing "
                              "to trace")
    return Trace(rec.launches, rec.operations, dict(rec._allocations), rec.device_waits)
