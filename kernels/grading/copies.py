"""A kernel as data, so that a process where no code of the student's ever ran can
compile it for a GPU.

On the simulator a host function's kernels are known only once it runs, in its answer
process, where the student's code ran and may have replaced any part of Numba. So that
process does not compile them: it describes each kernel it launched (describe), and the
judge has a certifying process where no code of the student's ever ran (one that loaded
only kernels' definitions, or nothing of the notebook) make the kernel again from that
description alone (rebuild) and compile it, as a GPU does at the launch
(kernels.grading.compiled). Nothing the notebook did can change how Numba compiles
there.

A description is plain data for the channel (kernels.grading.channel): the function's
code object, marshalled (it is compiled, never run), and each global name its code
may read, and each value its closure holds, as one of:

    ["value", v]                    None, a bool, an int, a float or a string
    ["number", scalar]              a NumPy scalar of a number type
    ["array", array]                a NumPy array of a number type (a kernel's constant)
    ["dtype", text]                 a NumPy dtype
    ["tuple", [value, ...]]         a tuple of these
    ["namedtuple", name, [field, ...], [value, ...]]
    ["intenum", name, [[member, int], ...]]     an IntEnum class
    ["member", intenum, member]     one of its members
    ["module", name]                a module of the libraries a kernel may use
    ["namespace", name, [[attribute, value], ...]]   a module of the student's: the
                                    attributes the code may read
    ["attribute", module, name]     a value such a module holds (np.float32, math.sqrt,
                                    numba.int32, cuda.atomic)
    ["function", ...]               another CUDA function, described the same way
    ["opaque", why]                 anything else: it cannot be copied

Describing runs no code of the student's: values are recognised by their exact types
(no attribute of a student's object is read, so no property or __getattr__ runs), a
kernel object must be the simulator's own type with no extensions, and its function a
plain Python function.

On the simulator, the answer process also runs the copy (runnable): each launch of a
kernel runs the function made again from that launch's description, with Python's
builtins and the libraries' values as they were before any code of the student's ran.
So what ran is what is compiled: a kernel object that shows one function and calls
another, a builtin or a library function replaced, a global changed after the launch,
all change nothing.

A kernel whose code reads an opaque value is not compiled, and its exercise is not
graded automatically (the grader fails closed). The certifying process reads nothing
but data, a code object and the names of the libraries' modules. In the answer process,
each kernel is described at each launch, as it is then (kernels.checks.launches), with
functions bound and library modules' values read when this module was imported, before
any code of the student's ran: so code that changes a kernel's globals after its launch,
or replaces marshal's, NumPy's or Numba's names later, changes nothing described. Only
code that rewrites the grader's own modules or Python's builtins there could describe a
kernel falsely: the judge grades neither automatically (kernels.grading.judge.
inspect_answer).
"""

import builtins
import dis
import enum
import importlib
import os
import sys
import types
from marshal import dumps, loads

import numpy as np
from numpy import frombuffer, ndarray

# The libraries a kernel's globals may name, and the course's package
MODULES = ("math", "cmath", "operator", "numpy", "numba", "kernels")
# The modules whose values a kernel may read by name (np.float32, math.sqrt, cuda.atomic)
SEARCHED = ("numba.cuda", "numba", "numpy", "math", "cmath", "operator", "numba.core.types")
MAX_FUNCTIONS = 32  # functions in one description: a kernel and the device functions it calls
MAX_ARRAY_BYTES = 1 << 20  # a constant array a kernel reads
MAX_CODE_BYTES = 1 << 20
MAX_DEPTH = 8  # tuples and modules within each other

# What describe and runnable need, bound when this module is imported: in the answer
# process that is before any code of the student's runs, so code that later replaces
# marshal's, NumPy's, Python's or a library module's names changes nothing here. The
# SEARCHED modules' values are read from this snapshot, never from the modules as they
# are later.
_STARTING = {name: importlib.import_module(name) for name in SEARCHED}
_VALUES = {name: dict(vars(module)) for name, module in _STARTING.items()}
_BUILTINS = dict(vars(builtins))
_NAMED = {}  # id of a value -> (module, name, value), first in SEARCHED's order
for _module_name, _values in _VALUES.items():
    for _name, _value_of in _values.items():
        if _name.isidentifier() and not _name.startswith("__"):
            _NAMED.setdefault(id(_value_of), (_module_name, _name, _value_of))
_PLAIN = (type(None), bool, int, float, str)
_SCALARS = frozenset(t for t in set(np.sctypeDict.values()) if np.dtype(t).kind in "biuf")
_FUNCTION, _MODULE, _ENUM_TYPE = types.FunctionType, types.ModuleType, type(enum.IntEnum)
# The simulator's kernel type, where the simulator is loaded (the answer process)
_FAKE_KERNEL = getattr(sys.modules.get("numba.cuda.simulator.kernel"), "FakeCUDAKernel", None)
_PACKAGES = tuple(os.path.dirname(_STARTING[n].__file__) + os.sep
                  for n in ("numba", "numpy")) + (
    os.path.dirname(importlib.import_module("kernels").__file__) + os.sep,)


class CannotCopy(Exception):
    """The description holds a value that is not data, or is not a description."""


def describe(kernel):
    """(key, description) of the CUDA kernel `kernel` (the simulator's kernel object, or
    a Python function), as it is now: the key, hashable, is equal for equal
    descriptions."""
    function, device = _parts(kernel) if type(kernel) is not _FUNCTION else (kernel, False)
    description = (_function(function, device, (), [0]) if type(function) is _FUNCTION
                   else ["opaque", f"a kernel whose function is a {_type_name(function)}"])
    return _key(description), description


def library(function):
    """Whether the Python function `function` is one of Numba's, NumPy's or the course's
    own: written in their files, by a module of theirs, with that module's globals (a
    kernel of the student's compiled under such a file's name is not)."""
    if type(function) is not _FUNCTION or not function.__code__.co_filename.startswith(
            _PACKAGES):
        return False
    module = sys.modules.get(function.__module__) if type(function.__module__) is str \
        else None
    return type(module) is _MODULE and function.__globals__ is object.__getattribute__(
        module, "__dict__") and function.__globals__.get("__file__") == \
        function.__code__.co_filename


def _parts(kernel):
    """(function, whether a device function) of the simulator's kernel object, read
    from its instance dict; (None, False) for anything else."""
    if _FAKE_KERNEL is None or type(kernel) is not _FAKE_KERNEL:
        return None, False
    fields = object.__getattribute__(kernel, "__dict__")
    if fields.get("extensions"):
        return "a kernel with extensions", False
    return fields.get("fn"), fields.get("_device") is True


def _type_name(value):
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}" if not isinstance(value, str) else value


def _key(value):
    if type(value) is list and value[:1] == ["function"]:
        # marshal's bytes depend on reference counts: the code object itself compares
        return ("function", value[1], loads(value[2].tobytes()), *map(_key, value[3:]))
    if type(value) is list:
        return tuple(_key(v) for v in value)
    if type(value) is ndarray:
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if type(value) in _SCALARS:
        return ("number", value.dtype.str, value.tobytes())
    return (type(value).__name__, value)


def _function(function, device, chain, count):
    """The description of a plain Python function; `chain`: the functions being
    described that call it (a function that calls itself cannot be copied)."""
    count[0] += 1
    if count[0] > MAX_FUNCTIONS or any(f is function for f in chain):
        return ["opaque", "a CUDA function that calls itself, or more than "
                          f"{MAX_FUNCTIONS} CUDA functions"]
    chain += (function,)
    code = function.__code__
    names = sorted(set(_names(code)))
    scope = function.__globals__
    cells = []
    for cell in function.__closure__ or ():
        try:
            cells.append(_value(cell.cell_contents, names, chain, count, 0))
        except ValueError:  # an empty cell
            cells.append(["opaque", "a variable of the enclosing function not yet set"])
    defaults = [_value(v, names, chain, count, 0) for v in function.__defaults__ or ()]
    return ["function", str(function.__qualname__), frombuffer(dumps(code), np.uint8),
            [[n, _value(dict.__getitem__(scope, n), names, chain, count, 0)]
             for n in names if dict.__contains__(scope, n)],
            cells, defaults, bool(device)]


def _names(code):
    """Every name `code` and the code nested in it may read as a global (a superset:
    attribute names too; the certifying process keeps the globals the bytecode loads)."""
    yield from code.co_names
    for const in code.co_consts:
        if type(const) is types.CodeType:
            yield from _names(const)


def _value(value, names, chain, count, depth):
    kind = type(value)
    if depth > MAX_DEPTH:
        return ["opaque", "values nested too deep"]
    if kind in _PLAIN:
        return ["value", value]
    if kind in _SCALARS:
        return ["number", value]
    if kind is ndarray:
        if value.dtype.kind in "biuf" and value.nbytes <= MAX_ARRAY_BYTES:
            return ["array", value]
        return ["opaque", f"an array of {value.dtype} ({value.nbytes:,} bytes)"]
    if np.dtype in kind.__mro__ and kind.__module__ == "numpy.dtypes":
        return ["dtype", value.str] if value.kind in "biuf" else ["opaque", "a dtype"]
    if kind is tuple or tuple in kind.__bases__ and type(kind) is type:
        items = [_value(tuple.__getitem__(value, i), names, chain, count, depth + 1)
                 for i in range(tuple.__len__(value))]
        if kind is tuple:
            return ["tuple", items]
        fields = kind.__dict__.get("_fields")
        if type(fields) is tuple and all(type(f) is str for f in fields):
            return ["namedtuple", str(kind.__name__), list(fields), items]
    named = _NAMED.get(id(value))
    if named is not None and named[2] is value:
        return (["module", named[2].__name__] if kind is _MODULE
                else ["attribute", *named[:2]])
    if kind is _MODULE:
        return _module(value, names, chain, count, depth)
    if type(kind) is _ENUM_TYPE and issubclass(kind, enum.IntEnum):
        return ["member", _enum(kind), str(object.__getattribute__(value, "__dict__")["_name_"])]
    if kind is _ENUM_TYPE and issubclass(value, enum.IntEnum):
        return _enum(value)
    function, device = _parts(value)
    if type(function) is _FUNCTION:
        return _function(function, device, chain, count)
    return ["opaque", f"a {_type_name(function if function else value)}"]


def _module(module, names, chain, count, depth):
    fields = object.__getattribute__(module, "__dict__")
    name = fields.get("__name__")
    if _allowed(name) and sys.modules.get(name) is module:
        return ["module", name]
    return ["namespace", str(name), [[n, _value(fields[n], names, chain, count, depth + 1)]
                                     for n in names if n in fields]]


def _enum(kind):
    members = [[str(n), int.__int__(m)] for n, m in type(kind).__dict__[
        "__members__"].__get__(kind).items() if type(m) is kind]
    return ["intenum", str(kind.__name__), members]


def _allowed(name):
    return isinstance(name, str) and name.split(".")[0] in MODULES and all(
        part.isidentifier() for part in name.split("."))


def rebuild(description):
    """The CUDA function `description` holds, made here from its data alone (in the
    certifying process, where Numba targets a GPU and none of the student's code ever
    ran). CannotCopy if its code reads a value that cannot be copied, or if
    `description` is not a description."""
    return _Maker(here=False).kernel(description)


_RUNNABLE = {}  # key -> the function made from that description, in the answer process


def runnable(kernel, key, description):
    """On the simulator, in the answer process: the kernel to launch in place of
    `kernel` (the simulator's kernel object, configured for a launch), made from its
    description at this launch, with the builtins and the libraries' values of before
    any code of the student's ran; `kernel` itself where the description is not one
    that can be made (the judge then grades nothing automatically)."""
    if key not in _RUNNABLE:
        try:
            _RUNNABLE[key] = _Maker(here=True).function(description)[0]
        except CannotCopy:
            _RUNNABLE[key] = None
    function = _RUNNABLE[key]
    if function is None:
        return kernel
    fields = object.__getattribute__(kernel, "__dict__")
    made = type(kernel)(function, False)
    for name in ("grid_dim", "block_dim", "stream", "dynshared_size", "_signatures"):
        setattr(made, name, fields.get(name))
    return made


class _Maker:
    """Makes functions and values from descriptions: in the certifying process
    (`here` False) from the libraries as they are there; in the answer process (`here`)
    from the snapshot this module took at its import."""

    def __init__(self, here):
        self.here, self.count = here, 0

    def kernel(self, description):
        function, device = self.function(description)
        return self.jit(function, device)

    def jit(self, function, device):
        jit = _VALUES["numba.cuda"]["jit"] if self.here else importlib.import_module(
            "numba.cuda").jit
        return jit(device=True)(function) if device else jit(function)

    def function(self, description):
        if not (type(description) is list and len(description) == 7
                and description[0] == "function"):
            raise CannotCopy("the description of a kernel is not one")
        _, qualname, code_bytes, scope, cells, defaults, device = description
        self.count += 1
        if self.count > MAX_FUNCTIONS or type(code_bytes) is not ndarray or \
                code_bytes.dtype != np.uint8 or code_bytes.size > MAX_CODE_BYTES:
            raise CannotCopy("the description of a kernel is not one")
        try:
            code = loads(code_bytes.tobytes())
        except (ValueError, EOFError, TypeError) as err:
            raise CannotCopy(f"its code could not be read ({err})") from None
        if type(code) is not types.CodeType or type(cells) is not list or \
                len(cells) != len(code.co_freevars) or type(scope) is not list:
            raise CannotCopy("the description of a kernel is not one")
        read = set(_loaded_globals(code))
        namespace = {"__builtins__": dict(_BUILTINS) if self.here else builtins,
                     "__name__": "__kernel_copy__"}
        for pair in scope:
            if not (type(pair) is list and len(pair) == 2 and type(pair[0]) is str):
                raise CannotCopy("the description of a kernel is not one")
            if pair[0] in read:
                namespace[pair[0]] = self.value(pair[1], f"`{pair[0]}`")
        closure = tuple(types.CellType(self.value(c, f"`{name}`"))
                        for name, c in zip(code.co_freevars, cells))
        made = types.FunctionType(code, namespace, code.co_name, None, closure)
        if defaults:
            made.__defaults__ = tuple(self.value(d, "a default value") for d in defaults)
        made.__qualname__ = str(qualname)
        return made, device is True

    def value(self, description, what, depth=0):
        kind = description[0] if type(description) is list and description else None
        size = len(description) if kind else 0
        if depth > MAX_DEPTH:
            raise CannotCopy("the description of a kernel is not one")
        if kind == "value" and size == 2 and type(description[1]) in _PLAIN:
            return description[1]
        if kind == "number" and size == 2 and type(description[1]) in _SCALARS:
            return description[1]
        if kind == "array" and size == 2 and type(description[1]) is ndarray:
            return description[1]
        if kind == "dtype" and size == 2 and type(description[1]) is str:
            try:
                return np.dtype(description[1])
            except TypeError:
                raise CannotCopy("the description of a kernel is not one") from None
        if kind in ("tuple", "namedtuple") and type(description[-1]) is list:
            items = tuple(self.value(v, what, depth + 1) for v in description[-1])
            if kind == "tuple" and size == 2:
                return items
            if size == 4 and type(description[2]) is list and len(description[2]) == len(
                    items) and all(type(f) is str and f.isidentifier() for f in description[2]):
                import collections

                return collections.namedtuple(str(description[1]), description[2])(*items)
        if kind == "intenum" and size == 3 and type(description[2]) is list:
            return self.intenum(description)
        if kind == "member" and size == 3 and type(description[2]) is str:
            made = self.intenum(description[1])
            if description[2] in made.__members__:
                return made[description[2]]
        if kind == "module" and size == 2 and _allowed(description[1]):
            return self.module(description[1])
        if kind == "namespace" and size == 3 and type(description[2]) is list:
            made = types.ModuleType(str(description[1]))
            for pair in description[2]:
                if not (type(pair) is list and len(pair) == 2 and type(pair[0]) is str):
                    raise CannotCopy("the description of a kernel is not one")
                setattr(made, pair[0], self.value(pair[1], what, depth + 1))
            return made
        if kind == "attribute" and size == 3 and description[1] in SEARCHED \
                and type(description[2]) is str and description[2].isidentifier():
            if self.here:
                if description[2] not in _VALUES[description[1]]:
                    raise CannotCopy("the description of a kernel is not one")
                return _VALUES[description[1]][description[2]]
            return getattr(importlib.import_module(description[1]), description[2])
        if kind == "function":
            return self.jit(*self.function(description))
        if kind == "opaque" and size == 2:
            raise CannotCopy(f"it reads {what}, {str(description[1])[:200]}, which the "
                             "grader cannot copy into a process where none of your code ran")
        raise CannotCopy("the description of a kernel is not one")

    def intenum(self, description):
        if not (type(description) is list and len(description) == 3
                and description[0] == "intenum" and type(description[2]) is list
                and all(type(m) is list and len(m) == 2 and type(m[0]) is str
                        and m[0].isidentifier() and type(m[1]) is int
                        for m in description[2])):
            raise CannotCopy("the description of a kernel is not one")
        return enum.IntEnum(str(description[1]), [tuple(m) for m in description[2]])

    def module(self, name):
        if self.here and name in _STARTING:
            if name == "numba.cuda":  # the simulator swaps this very module in a kernel
                return _STARTING[name]
            copy = types.ModuleType(name)  # its values as they were at the start
            vars(copy).update(_VALUES[name])
            return copy
        return importlib.import_module(name)


def _loaded_globals(code):
    """The global names the bytecode of `code` (and of the code nested in it) loads."""
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            yield instruction.argval
    for const in code.co_consts:
        if type(const) is types.CodeType:
            yield from _loaded_globals(const)
