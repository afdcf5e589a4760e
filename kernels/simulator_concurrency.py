"""What a GPU does at once and the Numba CUDA simulator does in turn, where an answer's
result depends on it: a lock that other threads find taken, and a copy into pinned
memory that is not done when it returns.

A lock. On a GPU the 32 threads of a warp run a compare-and-swap together and one of
them takes the lock, and the blocks run at once; on the simulator the blocks run one
after another and the threads of a block in turns of milliseconds, so a thread takes a
lock and frees it long before another tries: a kernel whose threads try for a lock once,
or a few times, and give up when it is taken (no retry loop) loses no update there, and
many on a GPU. So the release of a lock (an atomic that puts back the value the word held
before an atomic changed it: exchange, compare-and-swap, subtract...) lands late: the
first DEFERRED_RELEASES releases of each block, in each array of locks, stay unseen
until TRIES other atomics on that word have found it taken (a compare-and-swap expecting
the free value, an exchange storing the taken one, an add of 0 that checks it...), or
LATE_S has passed since the last (for threads that wait with plain reads), or the launch
ends. An atomic that would act on the taken value as a new one (a compare-and-swap
expecting it) runs after the release lands; an added or subtracted release composes
with what came in between. A lock that retries until it gets it waits a little longer;
one that gives up loses its update, as on a GPU. Not in a trace (the tracer orders a
lock's accesses by its fences, not by timing). In both, a try that finds a lock taken
ends its thread's turn (yield_if_spinning), so that the holder runs soon, as on a GPU
where it runs at once.

Mapped memory (cuda.mapped_array) is host memory a kernel writes into directly: what a
kernel wrote there (on any stream: a launch is asynchronous), the host sees when it
waits for the kernel, as for a copy below.

A copy. CUDA's copy from the device into page-locked (pinned) host memory on a stream
returns before it is done; the host may read the memory only after it waits for the
copy: stream.synchronize(), an event recorded after it synchronized, or
cuda.synchronize(); a synchronous copy (stream 0) waits too, because the legacy default
stream waits for every stream's earlier work. On the simulator every copy is done when
it returns, so a function that reads a pinned buffer before it waits gets the right
values there and stale ones on a GPU. Here such a copy takes the device's values at
once (later device work does not change what it copies), fills the pinned memory with
garbage (0xA5 bytes), and writes the values only when the host waits for
it as CUDA defines it; a read before the wait gets garbage, as it may on a GPU.

kernels.simulator.install() installs both; the tracer (kernels.trace.hooks) records
the same copies and waits around them.
"""

import contextlib
import functools
import itertools
import threading
import time
import weakref

import numpy as np

# Numba's simulator modules and their functions as install() found them: imported there,
# since importing numba.cuda installs kernels.simulator, which installs this module
_numba = {}

DEFERRED_RELEASES = 2  # per block and array of locks, the lock releases that land late
TRIES = 4  # the atomics on the lock that find it taken before such a release lands
LATE_S = 0.02  # or this long after it, for threads that wait with plain reads
# left: an array of locks's address -> its releases this block may still make late (None:
# none, in a trace); held: a lock's address -> its value when free; holder: a lock's
# address -> the thread that took it; late: a lock's address -> _Late
_LOCKS = {"left": None, "held": {}, "holder": {}, "late": {}}
_ATOMICS = threading.Lock()
_ABSOLUTE = ("cas", "compare_and_swap", "exch")  # a release that stores the free value


class _Late:
    """A release not seen yet: the atomic `name`, atomic(*args), that stored `free` in
    ary[index]."""

    def __init__(self, ary, index, free, name, atomic, args):
        self.ary, self.index, self.free = ary, index, free
        self.name, self.atomic, self.args = name, atomic, args
        self.tries, self.deadline = TRIES, time.monotonic() + LATE_S

    def land(self):
        if self.name in _ABSOLUTE:
            self.ary[self.index] = self.free
        else:  # added, subtracted...: it composes with what came in between
            self.atomic(*self.args)


def block_starts(traced):
    """A block's threads start: its first DEFERRED_RELEASES releases land late, but in a
    trace (whose threads would record every try)."""
    _LOCKS["left"] = None if traced else {}


def launch_ends():
    """Every release still unseen lands, and no lock is held."""
    with _ATOMICS:
        for late in _LOCKS["late"].values():
            late.land()
        _LOCKS["late"].clear()
        _LOCKS["held"].clear()
        _LOCKS["holder"].clear()


def _landing():
    """A daemon's loop while releases are late: those whose time is up land (a thread
    that waits for a lock with plain reads makes no try)."""
    while True:
        time.sleep(LATE_S / 4)
        with _ATOMICS:
            now = time.monotonic()
            for address, late in list(_LOCKS["late"].items()):
                if late.deadline <= now:
                    late.land()
                    del _LOCKS["late"][address]
            if not _LOCKS["late"]:
                _numba["landing"] = None
                return


def _ndarray(array):
    """The NumPy array behind an array a kernel holds."""
    while not isinstance(array, np.ndarray):
        array = getattr(array, "_item", None) or getattr(array, "_ary")
    return array


def _finds_it_taken(name, args, taken):
    """Whether atomic `name` with `args` on a word holding `taken` runs as a try that
    finds a lock taken: a compare-and-swap expecting another value, an exchange storing
    the same, any other atomic (it reads the value, and adds or sets what it adds)."""
    if name in ("cas", "compare_and_swap"):
        return args[-2] != taken
    if name == "exch":
        return args[-1] == taken
    return True


def yield_if_spinning(name, args, old, address):
    """End this thread's turn if atomic `name` with `args` on `address`, which read
    `old`, was a try that found the lock taken (a compare-and-swap that did not swap,
    an exchange that stored what was there) by a thread that can run on. Python runs one
    thread at a time and switches every few milliseconds: without this, each thread
    that waits for a lock spends its whole turn on tries while the holder waits for its
    own turn to release it (hundreds of tries, each an access the tracer records, per
    release). A holder that ended, or waits at a barrier, releases nothing while the
    others wait: they spin on without giving up their turns, to their limit."""
    taken = name in _ABSOLUTE and _finds_it_taken(name, args, old)
    holder = _LOCKS["holder"].get(address) if taken else None
    if holder is not None and holder.is_alive() and not getattr(
            holder, "syncthreads_blocked", False):
        time.sleep(0)


def element_address(ary, index):
    """The byte address of ary[index] (an int or a tuple of ints; a negative one counts
    from the end, as NumPy does): one lock, however its index is written."""
    if not isinstance(index, tuple):
        index = (index,)
    return ary.__array_interface__["data"][0] + sum(
        (int(i) % n if i < 0 else int(i)) * s for i, n, s in zip(index, ary.shape, ary.strides))


def _contended(op, name):
    """Numba's atomic `name`, with late releases (module docstring)."""
    def atomic(self, array, *args):
        if not hasattr(threading.current_thread(), "threadIdx"):  # not a CUDA thread
            return op(self, array, *args)
        ary = _ndarray(array)
        index = (0,) * ary.ndim if name == "compare_and_swap" else args[0]
        if not isinstance(index, tuple):
            index = (index,)
        address = element_address(ary, index)
        loaded = late_or_now(self, array, ary, index, address, *args)
        if _LOCKS["left"] is not None:  # (in a trace, the tracer's hook yields, unlocked)
            yield_if_spinning(name, args, loaded, address)
        return loaded

    def late_or_now(self, array, ary, index, address, *args):
        with _ATOMICS:
            late = _LOCKS["late"].get(address)
            if late is not None:
                if _finds_it_taken(name, args, ary[index]):  # before the late release
                    loaded = op(self, array, *args)
                    late.tries -= 1
                    late.deadline = time.monotonic() + LATE_S
                    if late.tries <= 0:  # the release lands, after this try
                        late.land()
                        del _LOCKS["late"][address]
                    return loaded
                late.land()  # after it, as if it had landed already
                del _LOCKS["late"][address]
            loaded = op(self, array, *args)
            now = ary[index]
            if loaded != now and address not in _LOCKS["held"]:  # taken
                _LOCKS["held"][address] = loaded
                _LOCKS["holder"][address] = threading.current_thread()
            elif loaded != now and now == _LOCKS["held"][address]:  # released
                del _LOCKS["held"][address]
                _LOCKS["holder"].pop(address, None)
                left = _LOCKS["left"]
                base = ary.__array_interface__["data"][0]
                if left is not None and left.setdefault(base, DEFERRED_RELEASES) > 0:
                    left[base] -= 1
                    ary[index] = loaded  # still taken, as others see it, for a while
                    _LOCKS["late"][address] = _Late(ary, index, now, name, functools.partial(
                        op, self, array), args)
                    _start_landing()
        return loaded
    atomic.__name__, atomic.__doc__ = op.__name__, op.__doc__
    return atomic


def _start_landing():  # (under _ATOMICS, as _landing's end)
    if not _numba.get("landing"):
        _numba["landing"] = threading.Thread(target=_landing, name="late lock releases",
                                             daemon=True)
        _numba["landing"].start()


# ------------------------------------------------------------------- pinned memory

def _root(ary):
    while isinstance(getattr(ary, "base", None), np.ndarray):
        ary = ary.base
    return ary


class _Noted:
    """Host arrays of one kind (pinned, mapped), by the memory they view, held weakly."""

    def __init__(self):
        self._refs = {}  # id of a root array -> a weak reference to it

    def note(self, ary):
        root = _root(ary)
        key = id(root)
        self._refs[key] = weakref.ref(root, lambda _, key=key: self._refs.pop(key, None))

    def forget(self, ary):
        self._refs.pop(id(_root(ary)), None)

    def __contains__(self, ary):
        root = _root(ary)
        ref = self._refs.get(id(root))
        return ref is not None and ref() is root

    def noting(self, make, memory=lambda made: made):
        """`make`, noting the memory of what it makes."""
        def made(*args, **kwargs):
            ary = make(*args, **kwargs)
            self.note(memory(ary))
            return ary
        made.__doc__, made.__name__ = make.__doc__, make.__name__
        return made


_PAGE_LOCKED, _MAPPED = _Noted(), _Noted()


def page_locked(ary):
    """Whether host array `ary` (or the array it views) is pinned memory."""
    return ary in _PAGE_LOCKED


@contextlib.contextmanager
def pinned(*arrays):
    """cuda.pinned(*arrays): the arrays are page-locked inside the block."""
    for ary in arrays:
        _PAGE_LOCKED.note(ary)
    try:
        yield
    finally:
        for ary in arrays:
            _PAGE_LOCKED.forget(ary)


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
    if (ary is None or is_legacy(stream) or not page_locked(ary)
            or ary.ndim == 0 or not ary.flags.c_contiguous):  # (done at once, as before)
        # done when it returns, after the copies its stream follows (the legacy default
        # stream: every stream's)
        _finish(_covered(stream))
        return _numba["copy_to_host"](self, ary, stream)
    _numba["check_array_compatibility"](self, ary)
    values = np.array(self._ary, copy=True)  # what the device holds now
    ary.view(np.uint8).fill(0xA5)  # garbage until the host waits
    with _LOCK:
        _PENDING.append((next(_NUMBERS), stream, ary, values))
    return ary


def kernel_starts(stream, args):
    """Before a launch on `stream`: what earlier work left in mapped memory it is given
    is there (stream order, or the events and waits before it)."""
    given = {id(_host_memory(a)) for a in args}
    _finish([p for p in _covered(stream) if id(p[2]) in given])


def kernel_ends(stream, args):
    """After a launch: what it wrote into mapped host memory (cuda.mapped_array) the host
    sees when it waits for it, as a copy's (a launch on the legacy default stream is
    asynchronous too: a synchronous copy or cuda.synchronize() waits for it)."""
    for a in args:
        ary = _host_memory(a)
        if ary is not None and ary.ndim and ary.flags.c_contiguous and ary in _MAPPED:
            values = np.array(ary, copy=True)
            ary.view(np.uint8).fill(0xA5)
            with _LOCK:
                _PENDING.append((next(_NUMBERS), stream, ary, values))


def _host_memory(a):
    return getattr(a, "_ary", a if isinstance(a, np.ndarray) else None)


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


def _event_init(self, timing=True):  # cuda.event(timing=False), as on a GPU
    pass


def _event_query(self):
    """Event.query(): the simulator's work is done once asked: the copies before it too."""
    _event_synchronize(self)
    return True


def _stream_query(self):
    _synchronize_stream(self)
    return True


def _context_synchronize(self):  # cuda.current_context().synchronize()
    _synchronize()


def install():
    """Note pinned arrays; let the first lock releases of each block land late; make
    copies into pinned memory on a stream finish when the host waits for them."""
    from numba import cuda
    from numba.cuda.simulator import api, kernelapi
    from numba.cuda.simulator.cudadrv import devicearray, devices

    if _numba:
        return
    _numba.update(
        legacy=api.stream(),
        check_array_compatibility=devicearray.check_array_compatibility,
        copy_to_host=devicearray.FakeCUDAArray.copy_to_host,
        copy_to_device=devicearray.FakeCUDAArray.copy_to_device,
        to_device=devicearray.to_device)
    _numba["legacy"].legacy_default = True
    for name in ("pinned_array", "pinned_array_like"):
        made = _PAGE_LOCKED.noting(getattr(devicearray, name))
        setattr(devicearray, name, made)
        setattr(cuda, name, made)
    devicearray.pinned = cuda.pinned = pinned
    devicearray.mapped_array = cuda.mapped_array = _MAPPED.noting(
        devicearray.mapped_array, memory=lambda made: made._ary)
    devicearray.to_device = cuda.to_device = _to_device
    for name in ("cas", "compare_and_swap", "exch", "add", "sub", "and_", "or_", "xor",
                 "inc", "dec", "max", "min"):
        setattr(kernelapi.FakeCUDAAtomic, name,
                _contended(getattr(kernelapi.FakeCUDAAtomic, name), name))
    devicearray.FakeCUDAArray.copy_to_host = _copy_to_host
    devicearray.FakeCUDAArray.copy_to_device = _copy_to_device
    api.stream.synchronize = _synchronize_stream
    api.stream.auto_synchronize = _auto_synchronize
    api.Event.record, api.Event.wait = _event_record, _event_wait
    api.Event.synchronize = _event_synchronize
    # what a GPU's streams, events and context also offer, and the simulator's lack
    api.Event.__init__, api.Event.query = _event_init, _event_query
    api.stream.query = _stream_query
    devices.FakeCUDAContext.synchronize = _context_synchronize
    api.synchronize = cuda.synchronize = _synchronize
    for name in ("default_stream", "legacy_default_stream"):
        setattr(api, name, _legacy_default_stream)
        setattr(cuda, name, _legacy_default_stream)
