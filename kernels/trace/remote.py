"""Tracing from a machine that runs kernels on a GPU: a child process on the simulator.

Numba reads NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported, so a
process that chose the GPU cannot switch to the simulator. The trace then runs in a
fresh Python started with NUMBA_ENABLE_CUDASIM=1 as ``python -m kernels.trace`` (a
module of the package: never the caller's main module, which multiprocessing's spawn
would import again, running a script or a notebook's code a second time), and comes
back pickled. A kernel
cannot be pickled itself: it travels by module and name, or, if it was defined in a
notebook or script (module __main__, which the child cannot import), as its compiled
code and the values, kernels and functions that code names. The trace comes back as
kernels.trace.wire encodes it (each clock once): pickled whole, a lock's trace, whose
every access carries a clock that knows most threads, passed the sandbox's limit on a
file's size.
"""

import builtins
import dis
import importlib
import linecache
import marshal
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import types

from kernels.trace import wire
from kernels.trace.model import ProcessEnded, TraceError


def in_simulator_process(fn, args, kwargs):
    """fn(*args, **kwargs) traced in a fresh Python with the simulator on: its Trace."""
    print("kernels.trace: this machine runs kernels on a GPU; tracing on the Numba CUDA "
          "simulator in a separate process", flush=True)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               # the child imports what this process could: kernels, the caller's modules
               PYTHONPATH=os.pathsep.join(p or os.getcwd() for p in sys.path))
    with tempfile.TemporaryDirectory(prefix="kernels-trace-") as folder:
        job, result = os.path.join(folder, "job.pickle"), os.path.join(folder, "trace.pickle")
        try:
            with open(job, "wb") as f:
                pickle.dump((fn, args, kwargs), f)
        except (pickle.PicklingError, AttributeError, TypeError) as err:
            raise TraceError(f"the call cannot travel to the simulator process ({err}): "
                             "pass module-level functions and NumPy arrays") from None
        proc = subprocess.run([sys.executable, "-m", "kernels.trace", job, result], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(result):
            raise ProcessEnded(f"the simulator process running your code ended ({_how(proc)})")
        with open(result, "rb") as f:
            status, value = pickle.load(f)
    if status == "error":
        raise value
    return wire.decode(value)


def _how(proc):
    """How the simulator process ended without a result, in the words the grader uses
    for an answer process's end: a signal by name (the OOM killer's is SIGKILL), else
    its exit status and, where Python printed a traceback, its last line."""
    if proc.returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-proc.returncode).name}"
        except ValueError:
            return f"killed by signal {-proc.returncode}"
    lines = proc.stderr.strip().splitlines()
    said = f": {lines[-1]}" if "Traceback" in proc.stderr and lines else ""
    return f"exit status {proc.returncode}{said}"


def child(job, result):
    """In the simulator process: run the pickled call in `job`, write (status, value)."""
    from kernels.trace import hooks

    with open(job, "rb") as f:
        fn, args, kwargs = pickle.load(f)
    try:
        outcome = ("ok", wire.encode(hooks.record(fn, args, kwargs)))
    except Exception as err:  # raised again in the caller's process
        outcome = ("error", err if _picklable(err) else TraceError(f"{type(err).__name__}: "
                                                                   f"{err}"))
    with open(result, "wb") as f:
        pickle.dump(outcome, f)


def _picklable(value):
    try:
        pickle.loads(pickle.dumps(value))
        return True
    except Exception:
        return False


def portable(obj):
    """A picklable stand-in for a kernel or function `obj` that the child turns back
    into it: by module and name where the child can import the module, else as its
    compiled code (a notebook's or a script's)."""
    fn = getattr(obj, "py_func", obj)
    # by name only where the name finds it: not a lambda, nor a function made by another
    found = getattr(sys.modules.get(fn.__module__), fn.__qualname__, None)
    if _importable(fn.__module__) and (found is obj or found is fn):
        return Named(fn.__module__, fn.__qualname__)
    return Code(obj)


def _importable(module):
    """True if a fresh Python can import `module`: not __main__, not made in memory."""
    return module != "__main__" and getattr(sys.modules.get(module), "__file__", None)


class Named:
    """A module-level kernel or function, by module and name."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def resolve(self):
        return getattr(importlib.import_module(self.module), self.name)

    def __getitem__(self, configuration):
        return self.resolve()[configuration]

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)


class Code:
    """A kernel, device function or function defined in __main__ (or in a module made
    in memory), rebuilt in the child from its compiled code and the modules, values,
    kernels and functions that code names, each taken from the function's own globals.

    The code object travels, not source text: a cell's source is found by file name and
    line, and a later cell run under the same name (a module's source run again with a
    change) would hand over another function's lines and names. The lines of its cell
    go along for the tracer's messages."""

    def __init__(self, obj):
        fn = getattr(obj, "py_func", obj)
        self.name = fn.__name__
        if fn.__closure__:
            raise TraceError(f"{self.name} uses variables of the function that made it, "
                             "which the simulator process cannot rebuild; define it at "
                             "the top level of a cell or module")
        self.kind = _kind(obj)
        self.code = marshal.dumps(fn.__code__)
        self.defaults = [_value(f"the defaults of {self.name}", d)
                         for d in (fn.__defaults__, fn.__kwdefaults__)]
        self.filename = fn.__code__.co_filename
        self.lines = linecache.getlines(self.filename, fn.__globals__)
        self.names = {}
        for name in _names(fn.__code__):
            if name in fn.__globals__:
                value = fn.__globals__[name]
                # a function that calls itself by name is rebuilt once
                self.names[name] = (("itself", None) if value is obj or value is fn
                                    else _value(name, value))

    def resolve(self):
        from numba import cuda

        if self.lines and self.filename not in linecache.cache:
            linecache.cache[self.filename] = (sum(map(len, self.lines)), None, self.lines,
                                              self.filename)
        # __builtins__ as a module's globals hold it: C code that imports (NumPy's
        # x.sum() does, through PyImport_Import) looks it up there, and fails without it
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        defaults, kwdefaults = (_rebuilt(how, value) for how, value in self.defaults)
        fn = types.FunctionType(marshal.loads(self.code), namespace, self.name, defaults)
        fn.__kwdefaults__ = kwdefaults
        built = fn if self.kind == "function" else cuda.jit(fn, device=self.kind == "device")
        for name, (how, value) in self.names.items():
            namespace[name] = built if how == "itself" else _rebuilt(how, value)
        return built

    def __getitem__(self, configuration):
        return self.resolve()[configuration]

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)


def _kind(obj):
    """What the child makes of `obj`'s function: a CUDA "kernel", a CUDA "device"
    function, or a plain "function" (any other Numba function runs as its Python)."""
    from kernels import SIMULATOR

    if SIMULATOR:
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        device = obj._device if isinstance(obj, FakeCUDAKernel) else None
    else:
        from numba.cuda.dispatcher import CUDADispatcher

        device = (bool(obj.targetoptions.get("device")) if isinstance(obj, CUDADispatcher)
                  else None)
    return "function" if device is None else "device" if device else "kernel"


def _names(code):
    """Every global name `code` and the functions nested in it read: not the attribute
    names (x in cuda.threadIdx.x), which a notebook's global x must not shadow."""
    found = {i.argval for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _value(name, value):
    """(how, what) for the child to rebuild `value`: a module by name, a kernel or a
    function of a notebook as its code, anything else pickled."""
    if isinstance(value, types.ModuleType):
        return "module", value.__name__
    if hasattr(value, "py_func") or (isinstance(value, types.FunctionType)
                                     and not _importable(value.__module__)):
        return "code", portable(value)  # another kernel, device function or function
    if getattr(value, "__module__", None) != "__main__":
        try:
            pickle.dumps(value)  # numbers, tuples, NumPy and Numba types, module functions
            return "value", value
        except Exception:
            pass
    raise TraceError(f"the kernel refers to {name} ({type(value).__name__}), which the "
                     "simulator process cannot rebuild; put the kernel in a module")


def _rebuilt(how, value):
    return (importlib.import_module(value) if how == "module" else
            value.resolve() if how == "code" else value)
