"""A kernel as data, so that a process where no code of the student's ever ran can
compile it for a GPU.

On the simulator a host function's kernels are known only once it runs, in its answer
process, where the student's code ran and may have replaced any part of Numba. So that
process does not compile them: it describes each kernel it launched (describe), and the
judge has a certifying process, into which nothing of the notebook is ever loaded, make
the kernel again from that description alone (rebuild) and compile it, as a GPU does at
the launch (kernels.grading.compiled). Nothing the notebook did can change how Numba
compiles there.

A description is plain data for the channel (kernels.grading.channel): the function's
code object, marshalled (it is compiled, never run), and each global name its code
may read, and each value its closure holds, as one of:

    ["value", v]                    None, a bool, an int, a float or a string
    ["number", scalar]              a NumPy scalar of a number type
    ["array", array]                a NumPy array of a number type (a kernel's constant)
    ["tuple", [value, ...]]         a tuple of these
    ["module", name]                a module of the libraries a kernel may use
    ["attribute", module, name]     a value such a module holds (np.float32, math.sqrt,
                                    numba.int32, cuda.atomic)
    ["function", ...]               another CUDA function, described the same way
    ["opaque", why]                 anything else: it cannot be copied

A kernel whose code reads an opaque value is not compiled, and its exercise is not
graded automatically (the grader fails closed). The certifying process reads nothing
but data, a code object and the names of the libraries' modules. In the answer process,
each kernel is described at each launch, as it is then (kernels.checks.launches), with
functions bound and library modules' values read when this module was imported, before
any code of the student's ran: so code that changes a kernel's globals after its launch,
or replaces marshal's, NumPy's or Numba's names later, changes nothing described. Only
code that rewrites the grader's own modules or Python's builtins there could describe a
kernel falsely: the judge does not grade the first automatically and flags the second
for review (kernels.grading.judge.inspect_answer).
"""

import builtins
import dis
import importlib
import sys
import types
from marshal import dumps, loads

import numpy as np
from numpy import frombuffer, generic, ndarray

# The libraries a kernel's globals may name, and the course's package
MODULES = ("math", "cmath", "operator", "numpy", "numba", "kernels")
# The modules whose values a kernel may read by name (np.float32, math.sqrt, cuda.atomic)
SEARCHED = ("numba.cuda", "numba", "numpy", "math", "cmath", "operator", "numba.core.types")
MAX_FUNCTIONS = 32  # functions in one description: a kernel and the device functions it calls
MAX_ARRAY_BYTES = 1 << 20  # a constant array a kernel reads
MAX_CODE_BYTES = 1 << 20
_KINDS = "biuf"  # the channel's number types

# What describe needs, bound when this module is imported: in the answer process that is
# before any code of the student's runs, so code that later replaces marshal's, NumPy's or
# a library module's names does not change how a kernel is described. The SEARCHED
# modules' values are read from this snapshot, never from the modules as they are later.
_STARTING = {name: importlib.import_module(name) for name in SEARCHED}
_NAMED = {}  # id of a value -> (module, name), first in SEARCHED's order
for _module_name, _module in _STARTING.items():
    for _name, _value_of in list(vars(_module).items()):
        if _name.isidentifier() and not _name.startswith("__"):
            _NAMED.setdefault(id(_value_of), (_module_name, _name, _value_of))


class CannotCopy(Exception):
    """The description holds a value that is not data, or is not a description."""


def describe(function):
    """(key, description) of the CUDA function whose Python function is `function`, as
    it is now: the key, hashable, is equal for two equal descriptions."""
    description = _function(function, device=False, seen=[])
    return _key(description), description


def _key(value):
    if isinstance(value, list) and value[:1] == ["function"]:
        # marshal's bytes depend on reference counts: the code object itself compares
        return ("function", value[1], loads(value[2].tobytes()), *map(_key, value[3:]))
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    if isinstance(value, ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, generic):
        return ("number", value.dtype.str, value.tobytes())
    return (type(value).__name__, value)


def _function(function, device, seen):
    if len(seen) >= MAX_FUNCTIONS or any(f is function for f in seen):
        return ["opaque", "a CUDA function that calls itself, or too many CUDA functions"]
    seen.append(function)
    code = function.__code__
    names = sorted(set(_names(code)))
    scope = function.__globals__
    cells = []
    for cell in function.__closure__ or ():
        try:
            cells.append(_value(cell.cell_contents, seen))
        except ValueError:  # an empty cell
            cells.append(["opaque", "a variable of the enclosing function not yet set"])
    defaults = [_value(v, seen) for v in function.__defaults__ or ()]
    return ["function", str(function.__qualname__), frombuffer(dumps(code), np.uint8),
            [[n, _value(scope[n], seen)] for n in names if n in scope],
            cells, defaults, bool(device)]


def _names(code):
    """Every name `code` and the code nested in it may read as a global (a superset:
    attribute names too; the certifying process keeps the globals the bytecode loads)."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _value(value, seen):
    if value is None or isinstance(value, (bool, int, float, str)) and not isinstance(
            value, generic):
        return ["value", value]
    if isinstance(value, generic) and value.dtype.kind in _KINDS:
        return ["number", value]
    if isinstance(value, ndarray):
        if value.dtype.kind in _KINDS and value.nbytes <= MAX_ARRAY_BYTES:
            return ["array", value]
        return ["opaque", f"an array of {value.dtype} ({value.nbytes:,} bytes)"]
    if isinstance(value, tuple):
        return ["tuple", [_value(v, seen) for v in value]]
    named = _NAMED.get(id(value))
    if named is not None and named[2] is value:
        return (["module", value.__name__] if isinstance(value, types.ModuleType)
                else ["attribute", *named[:2]])
    if isinstance(value, types.ModuleType):
        name = getattr(value, "__name__", "")
        if _allowed(name) and sys.modules.get(name) is value:
            return ["module", name]
        return ["opaque", f"the module {name}"]
    function = _cuda_function(value)
    if function is not None:
        return _function(function[0], function[1], seen)
    return ["opaque", f"a {type(value).__module__}.{type(value).__qualname__}"]


def _cuda_function(value):
    """(Python function, whether a device function) of a CUDA function, on the
    simulator (FakeCUDAKernel) or on a GPU (a dispatcher), else None."""
    if type(value).__name__ == "FakeCUDAKernel":
        return getattr(value, "fn", None), bool(getattr(value, "_device", False))
    options = getattr(value, "targetoptions", None)
    function = getattr(value, "py_func", None)
    if isinstance(options, dict) and isinstance(function, types.FunctionType):
        return function, bool(options.get("device"))
    return None


def _allowed(name):
    return isinstance(name, str) and name.split(".")[0] in MODULES and all(
        part.isidentifier() for part in name.split("."))


def rebuild(description):
    """The CUDA function `description` holds, made here from its data alone (in the
    certifying process: Numba targets a GPU). CannotCopy if its code reads a value that
    cannot be copied, or if `description` is not a description."""
    from numba import cuda

    function, device = _rebuild_function(description, [0])
    return cuda.jit(device=True)(function) if device else cuda.jit(function)


def _rebuild_function(description, count):
    if not (isinstance(description, list) and len(description) == 7
            and description[0] == "function"):
        raise CannotCopy("the description of a kernel is not one")
    _, qualname, code_bytes, scope, cells, defaults, device = description
    count[0] += 1
    if count[0] > MAX_FUNCTIONS or not isinstance(code_bytes, np.ndarray) or \
            code_bytes.dtype != np.uint8 or code_bytes.size > MAX_CODE_BYTES:
        raise CannotCopy("the description of a kernel is not one")
    try:
        code = loads(code_bytes.tobytes())
    except (ValueError, EOFError, TypeError) as err:
        raise CannotCopy(f"its code could not be read ({err})") from None
    if not isinstance(code, types.CodeType) or not isinstance(cells, list) or \
            len(cells) != len(code.co_freevars) or not isinstance(scope, list):
        raise CannotCopy("the description of a kernel is not one")
    read = set(_loaded_globals(code))
    namespace = {"__builtins__": builtins, "__name__": "__kernel_copy__"}
    for pair in scope:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise CannotCopy("the description of a kernel is not one")
        if pair[0] in read:
            namespace[pair[0]] = _rebuild_value(pair[1], f"`{pair[0]}`", count)
    closure = tuple(types.CellType(_rebuild_value(c, f"`{name}`", count))
                    for name, c in zip(code.co_freevars, cells))
    rebuilt = types.FunctionType(code, namespace, code.co_name, None, closure)
    if defaults:
        rebuilt.__defaults__ = tuple(_rebuild_value(d, "a default value", count)
                                     for d in defaults)
    rebuilt.__qualname__ = str(qualname)
    return rebuilt, bool(device)


def _loaded_globals(code):
    """The global names the bytecode of `code` (and of the code nested in it) loads."""
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            yield instruction.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _loaded_globals(const)


def _rebuild_value(description, what, count):
    from numba import cuda

    kind = description[0] if isinstance(description, list) and description else None
    if kind == "value" and len(description) == 2 and (
            description[1] is None or isinstance(description[1], (bool, int, float, str))):
        return description[1]
    if kind == "number" and len(description) == 2 and isinstance(description[1], np.generic):
        return description[1]
    if kind == "array" and len(description) == 2 and isinstance(description[1], np.ndarray):
        return description[1]
    if kind == "tuple" and len(description) == 2 and isinstance(description[1], list):
        return tuple(_rebuild_value(v, what, count) for v in description[1])
    if kind == "module" and len(description) == 2 and _allowed(description[1]):
        return importlib.import_module(description[1])
    if kind == "attribute" and len(description) == 3 and description[1] in SEARCHED \
            and isinstance(description[2], str) and description[2].isidentifier():
        return getattr(importlib.import_module(description[1]), description[2])
    if kind == "function":
        function, device = _rebuild_function(description, count)
        return cuda.jit(device=True)(function) if device else cuda.jit(function)
    if kind == "opaque" and len(description) == 2:
        raise CannotCopy(f"it reads {what}, {str(description[1])[:200]}, which the grader "
                         "cannot copy into a process where none of your code ran")
    raise CannotCopy("the description of a kernel is not one")
