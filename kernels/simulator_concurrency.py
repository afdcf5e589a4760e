"""What a GPU does at once and the Numba CUDA simulator does in turn, where an answer's
result depends on it: a lock that other threads find taken, and a copy into pinned
memory that is not done when it returns.

A lock. On a GPU the 32 threads of a warp run a compare-and-swap together, and one of
them takes the lock; on the simulator the threads of a block run as OS threads that
Python switches between every few milliseconds, so a thread takes a lock and frees it
long before another tries: a kernel whose threads try for a lock once and give up
when it is taken (no retry loop) loses no update there, and most on a GPU. So the first
CONTENDED_TAKES locks taken in each block are held a while (the taking thread lets the
others run): the others that try meanwhile find it taken. A thread that finds a lock
taken lets the others run too, as a GPU's spinning warp lets the holder's: else each
try of a spin would keep Python's interpreter lock for a whole switch interval while
the holder waits for it. A kernel that takes a lock
never runs its threads one after another (kernels.simulator runs_in_turn), so that
there are others to try.

Pinned memory. On the simulator a pinned array (cuda.pinned_array, pinned_array_like,
or one inside `with cuda.pinned(...)`) is ordinary memory; install() notes which host
arrays CUDA would page-lock (page_locked), for the copies below and the tracer.

A copy. CUDA's copy from the device into page-locked (pinned) host memory on a stream
returns before it is done; the host may read the memory only after it waits for the
copy: stream.synchronize(), an event recorded after it synchronized, or
cuda.synchronize(); a synchronous copy (stream 0) waits too, because the legacy default
stream waits for every stream's earlier work. On the simulator every copy is done when
it returns, so a function that reads a pinned buffer before it waits gets the right
values there and stale ones on a GPU. Here such a copy takes the device's values at
once (later device work does not change what it copies), fills the pinned memory with
garbage (kernels.simulator.garbage), and writes the values only when the host waits for
it as CUDA defines it; a read before the wait gets garbage, as it may on a GPU.

kernels.simulator.install() installs both; the tracer (kernels.trace.hooks) records
the same copies and waits around them.
"""

import contextlib
import itertools
import threading
import time
import weakref

import numpy as np

# Numba's simulator modules and their functions as install() found them: imported there,
# since importing numba.cuda installs kernels.simulator, which installs this module
_numba = {}

CONTENDED_TAKES = 2  # per block, locks held while the block's other threads run
HELD_S = 0.002  # how long each is held
_TAKES = {"left": 0}


def block_starts(traced):
    """A block's threads start: its first CONTENDED_TAKES lock takes are held, but in a
    trace, whose threads would record every try (the tracer orders the accesses by
    what locks and fences imply, whatever the order they ran in)."""
    _TAKES["left"] = 0 if traced else CONTENDED_TAKES


def _contended(cas):
    def taking(*args):
        loaded = cas(*args)
        old, val = args[-2:]
        if not isinstance(threading.current_thread(), _numba["BlockThread"]):
            return loaded
        if loaded != old:
            time.sleep(0)  # found taken: let the holder run, not the next try (a spin
            # would hold Python's lock for its whole switch interval, every turn)
        elif old == 0 and val != 0 and _TAKES["left"] > 0:
            _TAKES["left"] -= 1
            time.sleep(HELD_S)  # the block's other threads run, and find it taken
        return loaded
    taking.__name__, taking.__doc__ = cas.__name__, cas.__doc__
    return taking


# ------------------------------------------------------------------- pinned memory

_PAGE_LOCKED = {}  # id of a root array -> a weak reference to it


def _root(ary):
    while isinstance(getattr(ary, "base", None), np.ndarray):
        ary = ary.base
    return ary


def _note(ary):
    root = _root(ary)
    key = id(root)
    _PAGE_LOCKED[key] = weakref.ref(root, lambda _, key=key: _PAGE_LOCKED.pop(key, None))


def page_locked(ary):
    """Whether host array `ary` (or the array it views) is pinned memory."""
    root = _root(ary)
    ref = _PAGE_LOCKED.get(id(root))
    return ref is not None and ref() is root


def _noting(make):
    def made(*args, **kwargs):
        ary = make(*args, **kwargs)
        _note(ary)
        return ary
    made.__doc__, made.__name__ = make.__doc__, make.__name__
    return made


@contextlib.contextmanager
def pinned(*arrays):
    """cuda.pinned(*arrays): the arrays are page-locked inside the block."""
    for ary in arrays:
        _note(ary)
    try:
        yield
    finally:
        for ary in arrays:
            _PAGE_LOCKED.pop(id(_root(ary)), None)


# ------------------------------------------------------------------------- copies

_PENDING = []  # [(number, stream, host array, the values it gets)]: copies not yet done
_NUMBERS = itertools.count()
_LOCK = threading.Lock()


def is_legacy(stream):
    """Whether `stream` is the legacy default stream (0, None, cuda.default_stream(),
    cuda.legacy_default_stream()), which waits for every stream's earlier work."""
    return not stream or getattr(stream, "legacy_default", False)


def _covered(stream):
    """The pending copies the host waits for when it waits for `stream`: its own, those
    of the events it waited for, every one for the legacy default stream."""
    if is_legacy(stream):
        return list(_PENDING)
    waited = getattr(stream, "_waited_copies", ())
    return [p for p in _PENDING if p[1] is stream or p[0] in waited]


def _finish(copies):
    with _LOCK:
        for p in copies:
            if p in _PENDING:
                _PENDING.remove(p)
                np.copyto(p[2], p[3])


def _copy_to_host(self, ary=None, stream=0):
    if ary is None or is_legacy(stream) or not page_locked(ary):
        # done when it returns, after the copies its stream follows (the legacy default
        # stream: every stream's)
        _finish(_covered(stream))
        return _numba["copy_to_host"](self, ary, stream)
    _numba["check_array_compatibility"](self, ary)
    values = np.array(self._ary, copy=True)  # what the device holds now
    ary.reshape(-1).view(np.uint8).fill(0xA5)  # garbage until the host waits
    with _LOCK:
        _PENDING.append((next(_NUMBERS), stream, ary, values))
    return ary


def _copy_to_device(self, ary, stream=0):
    # from host memory a copy on `stream` (or a synchronous one) follows the copies into
    # it that the stream waits for
    _finish(_covered(stream))
    return _numba["copy_to_device"](self, ary, stream)


def _to_device(ary, stream=0, copy=True, to=None):
    _finish(_covered(stream))
    return _numba["to_device"](ary, stream=stream, copy=copy, to=to)


def _synchronize_stream(self):
    _finish(_covered(self))


@contextlib.contextmanager
def _auto_synchronize(self):
    yield self
    _synchronize_stream(self)


def _synchronize():
    _finish(list(_PENDING))


def _event_record(self, stream=0):
    self._copies = [p[0] for p in _covered(stream)]


def _event_wait(self, stream=0):
    if not is_legacy(stream):
        stream._waited_copies = set(getattr(stream, "_waited_copies", ())) | set(
            getattr(self, "_copies", ()))


def _event_synchronize(self):
    copies = set(getattr(self, "_copies", ()))
    _finish([p for p in _PENDING if p[0] in copies])


def _legacy_default_stream():
    return _numba["legacy"]


def install():
    """Note pinned arrays; hold the first lock takes of each block; make copies into
    pinned memory on a stream finish when the host waits for them."""
    from numba import cuda
    from numba.cuda.simulator import api, kernel, kernelapi
    from numba.cuda.simulator.cudadrv import devicearray

    if _numba:
        return
    _numba.update(
        BlockThread=kernel.BlockThread, legacy=api.stream(),
        check_array_compatibility=devicearray.check_array_compatibility,
        copy_to_host=devicearray.FakeCUDAArray.copy_to_host,
        copy_to_device=devicearray.FakeCUDAArray.copy_to_device,
        to_device=devicearray.to_device)
    _numba["legacy"].legacy_default = True
    for name in ("pinned_array", "pinned_array_like"):
        made = _noting(getattr(devicearray, name))
        setattr(devicearray, name, made)
        setattr(cuda, name, made)
    devicearray.pinned = cuda.pinned = pinned
    devicearray.to_device = cuda.to_device = _to_device
    for name in ("cas", "compare_and_swap"):
        setattr(kernelapi.FakeCUDAAtomic, name,
                _contended(getattr(kernelapi.FakeCUDAAtomic, name)))
    devicearray.FakeCUDAArray.copy_to_host = _copy_to_host
    devicearray.FakeCUDAArray.copy_to_device = _copy_to_device
    api.stream.synchronize = _synchronize_stream
    api.stream.auto_synchronize = _auto_synchronize
    api.Event.record, api.Event.wait = _event_record, _event_wait
    api.Event.synchronize = _event_synchronize
    api.synchronize = cuda.synchronize = _synchronize
    for name in ("default_stream", "legacy_default_stream"):
        setattr(api, name, _legacy_default_stream)
        setattr(cuda, name, _legacy_default_stream)
