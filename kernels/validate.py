"""Input checks shared by every host function: say what was wrong and what is accepted.

Host functions take NumPy arrays or Numba device arrays. They never copy, cast or
truncate silently: an array that does not fit is refused with a TypeError or
ValueError naming the argument, what it got and what it accepts.
"""

import functools

import numpy as np
from numba import cuda


def on_device(a):
    """True for a Numba device array (simulated too) or any CUDA array (e.g. CuPy)."""
    return hasattr(a, "copy_to_host") or hasattr(a, "__cuda_array_interface__")


@functools.lru_cache
def _dtypes(dtypes):
    # Cached: host functions check their arguments on every call, and building dtype
    # objects costs microseconds that a pipeline's first copy would wait for.
    return tuple(map(np.dtype, dtypes if isinstance(dtypes, tuple) else (dtypes,)))


def array(name, a, *, dtypes, ndim=None):
    """Check that `a` is a C-contiguous array of one of `dtypes` with `ndim` dims."""
    if not (isinstance(a, np.ndarray) or on_device(a)):
        raise TypeError(f"{name} must be a NumPy array or a CUDA device array, "
                        f"got {type(a).__name__}")
    dtypes = _dtypes(dtypes)
    if a.dtype not in dtypes:
        accepted = ", ".join(d.name for d in dtypes)
        raise TypeError(f"{name} has dtype {np.dtype(a.dtype).name}; accepted: {accepted} "
                        f"(convert it yourself, e.g. {name}.astype(np.{dtypes[0].name}))")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {a.ndim}-D with shape {a.shape}")
    contiguous = (a.flags["C_CONTIGUOUS"] if isinstance(a, np.ndarray)
                  else a.is_c_contiguous())
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (a strided view was given); "
                         f"pass np.ascontiguousarray({name})")
    return a


def nonempty(name, a):
    if a.size == 0:
        raise ValueError(f"{name} is empty; it needs at least one element")
    return a


def same_shape(**arrays):
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{n} {s}" for n, s in shapes.items())
        raise ValueError(f"shapes must match: {listed}")


def same_space(**arrays):
    """All NumPy arrays or all device arrays: mixing them would copy silently."""
    where = {name: on_device(a) for name, a in arrays.items()}
    if len(set(where.values())) > 1:
        listed = ", ".join(f"{n} on {'device' if d else 'host'}" for n, d in where.items())
        raise ValueError(f"arrays must all be on the host or all on the device: {listed}")


def launch(blocks, threads, *, max_threads=1024):
    """Check a 1D launch configuration: positive ints, threads within the limit."""
    for name, value in (("blocks", blocks), ("threads", threads)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if threads > max_threads:
        raise ValueError(f"threads must be at most {max_threads} per block, got {threads}")
    return int(blocks), int(threads)


def output(name, out, like, *, dtype=None, shape=None):
    """Return `out` checked against the expected dtype/shape and memory space of
    `like`, or a new array there if `out` is None."""
    dtype = np.dtype(dtype or like.dtype)
    shape = tuple(shape if shape is not None else like.shape)
    if out is None:
        if on_device(like):
            return cuda.device_array(shape, dtype=dtype)
        return np.empty(shape, dtype=dtype)
    array(name, out, dtypes=dtype, ndim=len(shape))
    if tuple(out.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(out.shape)}, expected {shape}")
    same_space(**{name: out, "input": like})
    return out
