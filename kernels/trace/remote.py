"""Tracing from a machine that runs kernels on a GPU: a child process on the simulator.

Numba reads NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported, so a
process that chose the GPU cannot switch to the simulator. The trace then runs in a
fresh Python started with NUMBA_ENABLE_CUDASIM=1 as ``python -m kernels.trace`` (a
module of the package: never the caller's main module, which multiprocessing's spawn
would import again, running a script or a notebook's code a second time), and comes
back pickled. A kernel
cannot be pickled itself: it travels by module and name, or, if it was defined in a
notebook or script (module __main__, which the child cannot import), as its source
and the plain values its code names.
"""

import ast
import importlib
import inspect
import linecache
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import types

from kernels.trace.model import TraceError


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
            raise TraceError("the simulator process failed: "
                             + (proc.stderr.strip().splitlines() or ["no message"])[-1])
        with open(result, "rb") as f:
            status, value = pickle.load(f)
    if status == "error":
        raise value
    return value


def child(job, result):
    """In the simulator process: run the pickled call in `job`, write (status, value)."""
    from kernels.trace import _record

    with open(job, "rb") as f:
        fn, args, kwargs = pickle.load(f)
    try:
        outcome = ("ok", _record(fn, args, kwargs))
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
    source (a notebook's or a script's code)."""
    fn = getattr(obj, "py_func", obj)
    if _importable(fn.__module__):
        return Named(fn.__module__, fn.__qualname__)
    return Source(obj)


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


class Source:
    """A kernel, device function or function defined in __main__ (or in a module made
    in memory): its source, and the modules, numbers, kernels and functions its code
    names, rebuilt in the child."""

    def __init__(self, obj):
        fn = getattr(obj, "py_func", obj)
        self.name = fn.__name__
        try:
            self.source = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            raise TraceError(f"the source of {self.name} cannot be found, so the simulator "
                             "process cannot rebuild it; put the kernel in a module") from None
        self.names = {}
        for name in _names(fn.__code__) | _decorator_names(self.source):
            if name in fn.__globals__:
                self.names[name] = _value(name, fn.__globals__[name])

    def resolve(self):
        namespace = {}
        for name, (how, value) in self.names.items():
            namespace[name] = (importlib.import_module(value) if how == "module" else
                               value.resolve() if how == "kernel" else value)
        filename = f"<traced {self.name}>"
        # The tracer names a shared array from its source line: let linecache find it.
        lines = self.source.splitlines(keepends=True)
        linecache.cache[filename] = (len(self.source), None, lines, filename)
        exec(compile(self.source, filename, "exec"), namespace)
        return namespace[self.name]

    def __getitem__(self, configuration):
        return self.resolve()[configuration]

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)


def _names(code):
    """Every global name `code` and the functions nested in it refer to."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _decorator_names(source):
    """The global names the decorators in `source` use (cuda in @cuda.jit)."""
    function = ast.parse(source).body[0]
    return {node.id for decorator in function.decorator_list for node in ast.walk(decorator)
            if isinstance(node, ast.Name)}


def _value(name, value):
    if isinstance(value, types.ModuleType):
        return "module", value.__name__
    if hasattr(value, "py_func") or (isinstance(value, types.FunctionType)
                                     and value.__name__ != "<lambda>"
                                     and not _importable(value.__module__)):
        return "kernel", portable(value)  # another kernel, device function or function
    if getattr(value, "__module__", None) != "__main__":
        try:
            pickle.dumps(value)  # numbers, tuples, NumPy and Numba types, module functions
            return "value", value
        except Exception:
            pass
    raise TraceError(f"the kernel refers to {name} ({type(value).__name__}), which the "
                     "simulator process cannot rebuild; put the kernel in a module")
