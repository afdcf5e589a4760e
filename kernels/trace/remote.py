"""Tracing from a machine that runs kernels on a GPU: a child process on the simulator.

Numba reads NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported, so a
process that chose the GPU cannot switch to the simulator. The trace then runs in a
fresh Python started with NUMBA_ENABLE_CUDASIM=1, and comes back pickled. A kernel
cannot be pickled itself: it travels by module and name, or, if it was defined in a
notebook or script (module __main__, which the child cannot import), as its source
and the plain values its code names.
"""

import ast
import importlib
import inspect
import linecache
import multiprocessing
import os
import pickle
import textwrap
import types

from kernels.trace.model import TraceError


def in_simulator_process(fn, args, kwargs):
    """fn(*args, **kwargs) traced in a fresh Python with the simulator on: its Trace."""
    print("kernels.trace: this machine runs kernels on a GPU; tracing on the Numba CUDA "
          "simulator in a separate process", flush=True)
    context = multiprocessing.get_context("spawn")
    saved = os.environ.get("NUMBA_ENABLE_CUDASIM")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # the child reads it when it imports kernels
    try:
        with context.Pool(1) as pool:
            return pool.apply(_child, (fn, args, kwargs))
    finally:
        if saved is None:
            os.environ.pop("NUMBA_ENABLE_CUDASIM")
        else:
            os.environ["NUMBA_ENABLE_CUDASIM"] = saved


def _child(fn, args, kwargs):
    from kernels.trace import _record

    return _record(fn, args, kwargs)


def portable(kernel):
    """A picklable stand-in for `kernel` that the child turns back into a kernel."""
    fn = kernel.py_func
    if fn.__module__ != "__main__":
        return Named(fn.__module__, fn.__qualname__)
    return Source(kernel)


class Named:
    """A module-level kernel, by module and name."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def resolve(self):
        return getattr(importlib.import_module(self.module), self.name)

    def __getitem__(self, configuration):
        return self.resolve()[configuration]


class Source:
    """A kernel (or device function) defined in __main__: its source, and the modules,
    numbers and other kernels its code names, rebuilt in the child."""

    def __init__(self, dispatcher):
        fn = dispatcher.py_func
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
    if hasattr(value, "py_func"):  # another kernel or device function
        return "kernel", portable(value)
    if getattr(value, "__module__", None) != "__main__":
        try:
            pickle.dumps(value)  # numbers, tuples, NumPy and Numba types, module functions
            return "value", value
        except Exception:
            pass
    raise TraceError(f"the kernel refers to {name} ({type(value).__name__}), which the "
                     "simulator process cannot rebuild; put the kernel in a module")
