"""See the threads: trace what every thread of a kernel reads and writes.

``trace.run(host_function, *args, **kwargs)`` calls one of the course's host
functions (or any function that launches kernels) with the Numba CUDA simulator
patched to record every access to global and shared arrays: block, thread, array,
index, read / write / atomic, and the order. ``trace.launch(kernel, (blocks,
threads), *args)`` does the same for one ``@cuda.jit`` kernel. Both return a
`Trace`; the analyses (coverage, 32-byte sectors per warp access, shared-memory bank
conflicts: kernels.trace.analyses; races and lock order: kernels.trace.hazards) and
the pictures take it (figures: kernels.trace.pictures; races in
plain text, for reports: kernels.trace.diagrams).

A trace is the kernel's *access pattern* at a tiny launch: which thread touches
which element, and what orders those accesses (block and grid barriers, atomics
after a fence, locks, streams: kernels.trace.order). It is not the GPU's timing, nor
its real interleaving: the simulator runs one block at a time (a cooperative kernel's
blocks all at once, kernels.trace.blocks) and its threads as OS threads.

On a machine with a GPU, Numba has already chosen the GPU when ``kernels`` was
imported (it reads NUMBA_ENABLE_CUDASIM once), so the trace runs in a separate
Python process on the simulator (``python -m kernels.trace``), and says so
(kernels.trace.remote); the arguments must then be picklable (NumPy arrays,
numbers); a kernel or function travels by module and name, or as its code if it
was defined in a notebook.
"""

import types

from kernels import SIMULATOR
from kernels.trace.analyses import bank_conflicts, coverage, sectors  # noqa
from kernels.trace.hazards import barriers, lock_order, races, stream_races  # noqa
from kernels.trace import remote
from kernels.trace.model import (LockNeverFree, NothingLaunched, ProcessEnded, Trace,  # noqa
                                 TraceError, TraceTooLarge)

# Trace in this process (the simulator), else in a simulator process of its own; tests
# set it False to take a GPU machine's path on the simulator.
LOCAL = SIMULATOR

__all__ = ["run", "launch", "Trace", "TraceError", "TraceTooLarge", "LockNeverFree",
           "NothingLaunched", "ProcessEnded",
           "coverage", "sectors", "bank_conflicts", "races", "stream_races", "lock_order",
           "barriers"]


def _is_kernel(obj):
    """True for a @cuda.jit kernel (not a device function), on the simulator or a GPU."""
    if SIMULATOR:
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        return isinstance(obj, FakeCUDAKernel) and not obj._device
    from numba.cuda.dispatcher import CUDADispatcher

    return isinstance(obj, CUDADispatcher) and not obj.targetoptions.get("device")


def _launch_kernel(kernel, configuration, *args):
    kernel[configuration](*args)


def run(fn, *args, **kwargs):
    """Call fn(*args, **kwargs) on the simulator and record every kernel it launches."""
    if not callable(fn):
        raise TypeError(f"trace.run needs a function that launches kernels, got "
                        f"{type(fn).__name__}")
    if _is_kernel(fn):
        raise TypeError(f"{fn.__name__} is a kernel: use trace.launch({fn.__name__}, "
                        "(blocks, threads), *args), or trace.run(host_function, ...)")
    if LOCAL:
        from kernels.trace import hooks  # (patches the simulator: imported only to trace)

        return hooks.record(fn, args, kwargs)
    if isinstance(fn, types.FunctionType):  # a notebook's function travels as its code
        fn = remote.portable(fn)
    return remote.in_simulator_process(fn, args, kwargs)


def launch(kernel, configuration, *args):
    """Launch kernel[configuration](*args) on the simulator and record it."""
    if not _is_kernel(kernel):
        what = getattr(kernel, "__name__", type(kernel).__name__)
        raise TypeError(f"{what} is not a CUDA kernel: trace.launch takes a function "
                        "decorated with @cuda.jit (not a device function, not a plain "
                        "Python function)")
    if not (isinstance(configuration, tuple) and len(configuration) in (2, 3)):
        raise TypeError(f"configuration must be (blocks, threads) or (blocks, threads, "
                        f"stream), got {configuration!r}")
    if LOCAL:
        from kernels.trace import hooks

        return hooks.record(_launch_kernel, (kernel, configuration) + args, {})
    return remote.in_simulator_process(
        _launch_kernel, (remote.portable(kernel), configuration) + args, {})

