"""128-bit loads of four float32, which Numba does not emit on its own.

Numba has no float4 type, and the compiler merges four 32-bit loads into one
128-bit load only where it can prove the address 16-byte aligned, which it cannot
for a global array. ``load_float4`` builds the load itself, as a Numba intrinsic (a
function that writes LLVM IR); on the simulator, which runs kernels as Python, a
plain function stands in for it and checks the alignment. ``load_float4_at`` is the
same load at a flat element offset from the array's start, for kernels that keep
their offsets in registers and advance them by a constant (kernels.matmul_tuned).
"""

import numpy as np
from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.errors import TypingError
from numba.cuda.extending import intrinsic

from kernels import SIMULATOR

WIDE = 4  # float32 in one 128-bit load


def _refusal(what):
    """The error for an array load_float4 cannot read: what was given, what is accepted."""
    return (f"load_float4 got {what}; it accepts a 2D C-contiguous float32 array "
            "(float32[:, ::1]) and integer row and col: it loads 16 bytes as 4 float32")


def load_float4_simulated(x, row, col):
    """load_float4 on the simulator: the four values, and a check of the alignment."""
    if x.ndim != 2 or x.dtype != np.float32:
        raise TypeError(_refusal(f"a {x.ndim}D {x.dtype} array"))
    assert col % WIDE == 0 and x.shape[1] % WIDE == 0, "a 128-bit load must be aligned"
    return x[row, col], x[row, col + 1], x[row, col + 2], x[row, col + 3]


def load_float4_typed(typingctx, x, row, col):
    """x[row, col:col + 4] of a 2D float32 array as 4 float32, with one 128-bit load
    (ld.global.v4.f32): a pointer to x[row, col], cast to a pointer to 4 floats and
    loaded with 16-byte alignment. The caller makes sure that x[row, col] starts on a
    16-byte boundary; no bounds are checked. Any other array is refused when the kernel
    is compiled: the load would read its bytes as float32 whatever they hold."""
    if not (isinstance(x, types.Array) and x.dtype == types.float32 and x.ndim == 2
            and x.layout == "C"):
        raise TypingError(_refusal(f"x of type {x}"))
    if not (isinstance(row, types.Integer) and isinstance(col, types.Integer)):
        raise TypingError(_refusal(f"row of type {row} and col of type {col}"))

    def codegen(context, builder, sig, args):
        (xty, rowty, colty), (x, row, col) = sig.args, args
        index = [context.cast(builder, row, rowty, types.intp),
                 context.cast(builder, col, colty, types.intp)]
        array = context.make_array(xty)(context, builder, x)
        ptr = cgutils.get_item_pointer(context, builder, xty, array, index)
        vector = ir.VectorType(ir.FloatType(), WIDE)
        loaded = builder.load(builder.bitcast(ptr, vector.as_pointer()), align=4 * WIDE)
        values = [builder.extract_element(loaded, ir.Constant(ir.IntType(32), i))
                  for i in range(WIDE)]
        return context.make_tuple(builder, sig.return_type, values)
    return types.UniTuple(types.float32, WIDE)(x, row, col), codegen


load_float4 = load_float4_simulated if SIMULATOR else intrinsic(load_float4_typed)


def _refusal_at(what):
    """The error for what load_float4_at cannot read."""
    return (f"load_float4_at got {what}; it accepts a 2D C-contiguous float32 array "
            "(float32[:, ::1]) and an integer offset: it loads 16 bytes as 4 float32")


def load_float4_at_simulated(x, offset):
    """load_float4_at on the simulator: the four values, and a check of the alignment."""
    if x.ndim != 2 or x.dtype != np.float32:
        raise TypeError(_refusal_at(f"a {x.ndim}D {x.dtype} array"))
    assert offset % WIDE == 0 and x.shape[1] % WIDE == 0, "a 128-bit load must be aligned"
    row, col = divmod(offset, x.shape[1])
    return x[row, col], x[row, col + 1], x[row, col + 2], x[row, col + 3]


def load_float4_at_typed(typingctx, x, offset):
    """The 4 float32 that start `offset` elements past x[0, 0] (x a 2D C-contiguous
    float32 array), with one 128-bit load: the address is x's data pointer plus the
    offset (widened to 64 bits, with zeros if unsigned), so a kernel that keeps its
    offset in a register and advances it by a constant pays one add per step, where
    x[row, col] redoes the index maths on row, col and the strides. As load_float4:
    the caller makes sure the address is 16-byte aligned and inside x; nothing is
    checked."""
    if not (isinstance(x, types.Array) and x.dtype == types.float32 and x.ndim == 2
            and x.layout == "C"):
        raise TypingError(_refusal_at(f"x of type {x}"))
    if not isinstance(offset, types.Integer):
        raise TypingError(_refusal_at(f"offset of type {offset}"))

    def codegen(context, builder, sig, args):
        (xty, offty), (x, offset) = sig.args, args
        wide = types.uint64 if not offty.signed else types.int64
        index = context.cast(builder, offset, offty, wide)
        array = context.make_array(xty)(context, builder, x)
        ptr = builder.gep(array.data, [index])
        vector = ir.VectorType(ir.FloatType(), WIDE)
        loaded = builder.load(builder.bitcast(ptr, vector.as_pointer()), align=4 * WIDE)
        values = [builder.extract_element(loaded, ir.Constant(ir.IntType(32), i))
                  for i in range(WIDE)]
        return context.make_tuple(builder, sig.return_type, values)
    return types.UniTuple(types.float32, WIDE)(x, offset), codegen


load_float4_at = load_float4_at_simulated if SIMULATOR else intrinsic(load_float4_at_typed)
