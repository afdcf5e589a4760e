"""Count kernel launches, on a GPU and on the simulator, by where each kernel was written.

A checker must see the reader's answer run on the device: an answer computed on the
host with NumPy launches nothing, and a launch of one of the course's own kernels
(``kernels.<topic>``) or reference solutions (``kernels.solutions``) is not the
reader's work. Numba has one launch path per target, wrapped here once:

* GPU: ``_LaunchConfiguration.__call__`` (``kernel[blocks, threads](...)``; ``forall``
  goes through it too);
* simulator: ``FakeCUDAKernel.__call__`` outside a kernel (inside one, the same call
  is a device function).

Kernels are sorted by the module of their Python function: ``SOLUTION`` (the course's
answers), ``COURSE`` (the rest of the ``kernels`` package), ``LIBRARY`` (Numba's own,
such as the kernel behind ``device_array[:] = value`` on a GPU), ``YOURS`` (anything
else: a notebook's kernels live in ``__main__``).
"""

import collections
import math
import threading

import numpy as np

from kernels import SIMULATOR, after_numba_cuda
from kernels.checks import swaps

__all__ = []  # kernels.checks gathers checkers; import this module by name

YOURS, COURSE, SOLUTION, LIBRARY = "yours", "course", "solution", "library"
ORIGINS = (YOURS, COURSE, SOLUTION, LIBRARY)
ANY = "any"  # a launch rule (registry): a kernel of yours or of the course

_counts = collections.Counter()
_lock = threading.Lock()
# While True, a launch of any kernel but Numba's own does nothing: a checker asks whether
# an answer's result comes from its kernels (kernels.checks.core.unlaunched).
_skipping = False


def origin(py_func):
    """YOURS, COURSE, SOLUTION or LIBRARY for the Python function of a kernel."""
    module = getattr(py_func, "__module__", None) or ""
    if module.split(".")[0] in ("numba", "numba_cuda"):
        return LIBRARY
    if module == "kernels.solutions" or module.startswith("kernels.solutions."):
        return SOLUTION
    if module == "kernels" or module.startswith("kernels."):
        return COURSE
    return YOURS


def _count(py_func, args, kernel=None):
    """Count a launch; in the grader's answer process on the simulator, also describe
    the kernel (`kernel`, its object) as it is at this launch, and return (key,
    description) for the launch to run the copy (record_launched)."""
    with _lock:
        _counts[origin(py_func)] += 1
        if _launched is None or _trusted(py_func):
            return None
        try:
            key, description = _describe(kernel if kernel is not None else py_func)
        except Exception as err:  # it cannot be described: the judge grades nothing
            description = ["opaque", f"{type(err).__name__}: {str(err)[:200]}"]
            key = tuple(description)
        if len(_launched) < 64:  # more is reported as such (kernels.grading.answers)
            _launched.setdefault((key, signature(args)), (
                str(getattr(py_func, "__qualname__", ""))[:300], description))
        return key, description


# In the grader's answer process on the simulator: {(a kernel as it was at a launch, the
# launch's signature): (its qualified name, its description)}, described at each launch
# by _describe, for the judge to have each compiled for a GPU (kernels.grading.compiled),
# as a GPU compiles a kernel for the types it is launched with; every kernel but those
# written in the libraries' and the course's own files (_trusted), whatever its
# __module__ says. _runnable makes the copy that the launch runs.
_launched = None
_describe = _runnable = _trusted = None
# Numba's names of the scalar types a signature may give (and of arrays' elements)
SCALARS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128", "bool")


def _type_name(value):
    """The signature's word for `value`'s Numba type: int32[:, ::1], float64, or "" for a
    type a signature of these words cannot say (records, tuples, 0-d arrays, objects)."""
    import numba
    from numba.core import types
    from numba.cuda.args import ArgHint

    if isinstance(value, ArgHint):
        value = value.value  # cuda.In(x): a kernel launched with it takes x's type
    try:
        typ = numba.typeof(value)
    except ValueError:
        return ""
    if isinstance(typ, types.Array) and typ.ndim and str(typ.dtype) in SCALARS:
        dims = [":"] * typ.ndim
        if typ.layout in "CF":
            dims[-1 if typ.layout == "C" else 0] = "::1"
        return f"{typ.dtype}[{', '.join(dims)}]".replace("bool[", "boolean[")
    if str(typ) in SCALARS:
        return "boolean" if str(typ) == "bool" else str(typ)
    return ""


def signature(args):
    """The signature a GPU compiles a kernel launched with `args` for, as Numba writes it
    ("void(float32[::1], int64)"), or "" if an argument's type cannot be said so."""
    names = [_type_name(a) for a in args]
    return f"void({', '.join(names)})" if all(names) else ""


def record_launched(describe, runnable, trusted):
    """From now on, on the simulator, keep each kernel launched as `describe`
    (kernels.grading.copies.describe: kernel -> (hashable key, description)) says it was
    at the launch, with the launch's signature, and launch the copy that `runnable`
    makes of it instead (kernels.grading.copies.runnable): what ran is what is compiled.
    Kernels whose Python function `trusted` says is the libraries' or the course's own
    (kernels.grading.copies.library) are launched as they are."""
    global _launched, _describe, _runnable, _trusted
    _launched, _describe, _runnable, _trusted = {}, describe, runnable, trusted


def launched():
    """{(key, signature): (qualified name, description)} of the kernels of yours
    launched since the last call (a copy; the record starts again)."""
    global _launched
    with _lock:
        found, _launched = _launched or {}, ({} if _launched is not None else None)
    return found


def counts():
    """Launches so far, by origin: a snapshot to subtract from a later one."""
    with _lock:
        return collections.Counter(_counts)


def skip(on):
    """Make launches of every kernel but Numba's own do nothing (on) or run again (off),
    in every thread of this process."""
    global _skipping
    _skipping = bool(on)


# Where an answer makes its arrays: within `poisoned`, each new one is poisoned, so that
# what an array left unwritten holds is never a result an earlier call left in memory
# (the simulator's NumPy memory, like a GPU's allocator, hands back freed memory as it
# was: a kernel that leaves an element unwritten can pass where the same case ran before).
_MAKERS = {"numpy": ("empty", "empty_like"),
           "numba.cuda": ("device_array", "device_array_like", "pinned_array",
                          "pinned_array_like", "mapped_array", "mapped_array_like",
                          "managed_array")}


def poison(dtype):
    """What a poisoned array of `dtype` holds: a value that spoils whatever it enters.
    NaN for floats (0xA5 bytes are about -1e-127 as a float64: a sum into never-zeroed
    memory swallowed it and came out right); 0xA5 bytes for integers, a large negative
    (or, unsigned, a large positive) number."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.array(np.nan, dtype)[()]
    return np.frombuffer(b"\xa5" * dtype.itemsize, dtype)[0]


def _poisoned(make):
    def poisoned_make(*args, **kwargs):
        array = make(*args, **kwargs)
        if type(threading.current_thread()).__name__ in ("BlockThread", "PooledThread"):
            # inside a simulated kernel: the simulator makes a block's shared array in
            # one unlocked check-then-create, whose window a slower maker would widen
            # (two threads of a block each making its own); left as NumPy makes it
            return array
        dtype = getattr(array, "dtype", None)
        if dtype is not None and dtype.kind in "iufc" and array.size:
            value = poison(dtype)
            if isinstance(array, np.ndarray):
                array[...] = value
            elif isinstance(getattr(array, "_ary", None), np.ndarray):  # the simulator's:
                array._ary[...] = value  # written directly, unseen by the tracer
            else:  # on the device, queued on the array's own stream (before any use)
                array.copy_to_device(np.full(array.shape, value, dtype),
                                     stream=getattr(array, "stream", 0) or 0)
        return array
    return poisoned_make


class poisoned:
    """Within it, every array made by NumPy's or Numba's empty-array makers on the host
    is poisoned, as a GPU's memory holds what it holds: the checkers run each answer step
    so (kernels.checks.core.answer_side)."""

    def __enter__(self):
        import importlib

        self.saved = [(module, name, getattr(module, name))
                      for module in map(importlib.import_module, _MAKERS)
                      for name in _MAKERS[module.__name__] if hasattr(module, name)]
        for module, name, make in self.saved:
            setattr(module, name, _poisoned(make))
        return self

    def __exit__(self, *exc):
        for module, name, make in self.saved:
            setattr(module, name, make)


class skipped(poisoned):
    """Within it, launches of every kernel but Numba's own do nothing, and new arrays are
    poisoned: what an answer returns then is what it computes without its kernels."""

    def __enter__(self):
        super().__enter__()
        skip(True)
        return self

    def __exit__(self, *exc):
        skip(False)
        super().__exit__(*exc)


def add(made):
    """Count launches made elsewhere ({origin: number}): the grader's judge adds those
    its answer process reports, so checkers read them as their own (kernels.grading.judge)."""
    with _lock:
        _counts.update(made)


class NotAKernel(TypeError):
    """A checker's own complaint: it was given something other than a CUDA kernel. Said
    as it is, never as an error the answer raised (kernels.checks.core.run_cases)."""


def require_kernel(kernel, checker):
    """Raise NotAKernel unless `kernel` is a CUDA kernel (for checkers that inspect one)."""
    if SIMULATOR:
        from numba.cuda.simulator.kernel import FakeCUDAKernel as Kernel
    else:
        from numba.cuda.dispatcher import CUDADispatcher as Kernel
    device = getattr(kernel, "_device", False) or getattr(kernel, "targetoptions", {}).get(
        "device", False)  # a device function: the simulator's flag, the GPU's option
    if not isinstance(kernel, Kernel) or device:
        raise NotAKernel(f"{checker} needs a CUDA kernel, a function decorated with "
                        f"@cuda.jit; got {type(kernel).__name__}, which is not a CUDA kernel")


def _install():
    if SIMULATOR:
        from numba.cuda.simulator import kernel as sim

        launch = sim.FakeCUDAKernel.__call__

        def counted(self, *args):
            if not self._device and sim._kernel_context is None:
                described = _count(self.fn, args, self)
                mine = origin(self.fn) != LIBRARY
                if _skipping and mine:
                    return None
                swap = swaps.swapped.active if mine else None
                threads = (math.prod(self.grid_dim) * math.prod(self.block_dim)
                           if swap is not None else 0)
                if described is not None:
                    self = _runnable(self, *described)
                if swap is not None:
                    return swap.launch(launch, self, args, threads)
            return launch(self, *args)

        sim.FakeCUDAKernel.__call__ = counted
    else:
        from numba.cuda import dispatcher

        launch = dispatcher._LaunchConfiguration.__call__

        def counted(self, *args):
            _count(self.dispatcher.py_func, args)
            if origin(self.dispatcher.py_func) == LIBRARY:
                return launch(self, *args)
            if _skipping:
                return None
            swap = swaps.swapped.active
            if swap is not None:
                return swap.launch(launch, self, args,
                                   math.prod(self.griddim) * math.prod(self.blockdim))
            return launch(self, *args)

        dispatcher._LaunchConfiguration.__call__ = counted


after_numba_cuda(_install)
