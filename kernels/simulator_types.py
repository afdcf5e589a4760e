"""Types on the simulator as Numba gives them on a GPU: float literals, and kernels
declared with signatures (kernels.simulator applies both).

Numba types a float literal in a kernel as float64, and float32 with float64 gives
float64: `s = 0.0; s += x[i]` over float32 data sums in float64 on a GPU. The simulator
runs the kernel as Python, where NumPy takes the literal for a weak Python float and
keeps float32, so the same correct answer loses digits there only. The simulator runs
each kernel and device function with its float and complex constants made float64 and
complex128 NumPy scalars (numba_typed), which NumPy promotes as Numba does. Integer
literals stay Python ints: NumPy scalars would slow every index, and Numba's int64
literals change results only where an int32 or smaller value overflows.

A kernel given signatures (`@cuda.jit("void(float32[:], float32)")`) is compiled on a
GPU for those types only. There an array of another dtype, rank or layout is never
converted: with one signature the kernel reads the array's memory as the declared
type, with several Numba refuses the launch; a scalar is converted to the declared
type. The simulator drops the signatures and runs the kernel on whatever it is given,
so such an answer is right there only. Here cuda.jit keeps them (`_signatures` on the
kernel: declaring_jit), and each launch is checked against them as a GPU would: an array that fits none
raises Numba's TypeError, and scalars are passed converted (declared_launch).
"""

import functools
import types as pytypes
import weakref

import numba
import numpy as np
from numba.core import sigutils, types
from numba.cuda.simulator import kernel
from numba.np import numpy_support


_NUMBA_TYPED = weakref.WeakKeyDictionary()  # a kernel's function -> numba_typed's


def numba_typed(fn):
    """`fn` with its float and complex constants made np.float64 and np.complex128, as
    Numba types them (see the module docstring); a function without code, as it is."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, pytypes.FunctionType) or code is None:
        return fn
    typed = _NUMBA_TYPED.get(fn)
    if typed is None:
        typed = pytypes.FunctionType(_typed_code(code), fn.__globals__, fn.__name__,
                                     fn.__defaults__, fn.__closure__)
        typed.__kwdefaults__ = fn.__kwdefaults__
        typed.__qualname__, typed.__module__ = fn.__qualname__, fn.__module__
        _NUMBA_TYPED[fn] = typed
    return typed


def _typed_code(code):
    return code.replace(co_consts=tuple(_typed_constant(c) for c in code.co_consts))


def _typed_constant(c):
    if type(c) is float:
        return np.float64(c)
    if type(c) is complex:
        return np.complex128(c)
    if type(c) is tuple:
        return tuple(_typed_constant(e) for e in c)
    if isinstance(c, pytypes.CodeType):
        return _typed_code(c)
    return c


def declaring_jit(jit):
    """cuda.jit, keeping a kernel's signatures, normalized, on the kernel it makes."""
    @functools.wraps(jit)
    def declaring(func_or_sig=None, *args, **kwargs):
        made = jit(func_or_sig, *args, **kwargs)
        if not (isinstance(func_or_sig, list) or sigutils.is_signature(func_or_sig)):
            return made
        signatures = func_or_sig if isinstance(func_or_sig, list) else [func_or_sig]
        try:
            declared = [sigutils.normalize_signature(s)[0] for s in signatures]
        except Exception:  # not one a GPU compiles either: Numba says so there
            return made

        def keeping(fn):
            k = made(fn)
            if type(k) is kernel.FakeCUDAKernel and not k._device:
                k._signatures = declared
            return k
        return keeping
    return declaring


def _fits(declared, value):
    """Whether a GPU passes `value` to a parameter of type `declared`: an array of the
    same dtype and rank, in a layout the declared one takes; any number for a number."""
    try:
        actual = numba.typeof(value)
    except ValueError:
        return True  # a type Numba cannot name: left to the launch
    if isinstance(declared, types.Array):
        return (isinstance(actual, types.Array) and actual.dtype == declared.dtype
                and actual.ndim == declared.ndim and (
                    declared.layout == "A" or actual.layout == declared.layout
                    or (actual.ndim == 1 and actual.layout in "CF")))
    if isinstance(declared, (types.Number, types.Boolean)):
        return isinstance(actual, (types.Number, types.Boolean))
    return True


def declared_launch(k, args):
    """The arguments a GPU passes to kernel `k` (declared with signatures), scalars
    converted to the declared types; TypeError where no signature takes `args`."""
    for declared in k._signatures:
        if len(declared) == len(args) and all(map(_fits, declared, args)):
            return tuple(
                numpy_support.as_dtype(t).type(a)
                if isinstance(t, (types.Number, types.Boolean)) else a
                for t, a in zip(declared, args))
    given = []
    for a in args:
        try:
            given.append(str(numba.typeof(a)))
        except ValueError:
            given.append(type(a).__name__)
    declared = " or ".join("(" + ", ".join(map(str, d)) + ")" for d in k._signatures)
    raise TypeError(
        f"No matching definition for argument type(s) {', '.join(given)}: "
        f"{getattr(k.fn, '__name__', 'the kernel')} is declared for {declared}. On a GPU "
        "a kernel given signatures runs only with arguments of those types (an array of "
        "another dtype, rank or layout is not converted): declare the types you launch "
        "it with, or give no signature")
