"""Compare a result with its reference: exact for integers, a tolerance by dtype for
floats, and the first mismatches named."""

import numpy as np


class MismatchError(AssertionError):
    """A result differs from its reference."""


def default_tolerance(dtype):
    """(rtol, atol) for comparing one float result of `dtype` with its reference."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return 1e-3, 1e-3
    if dtype == np.float32:
        return 1e-5, 1e-6
    return 1e-12, 1e-14


def to_host(a):
    """A NumPy array from a NumPy array, a Numba device array, or a scalar."""
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    return np.asarray(a)


def matching(got, expected, *, rtol=None, atol=None):
    """(which elements of `got` equal `expected`'s, as a 1-D or larger boolean array; how
    they were compared), as `check` compares them: arrays of one shape."""
    got, expected = to_host(got), np.asarray(expected)
    if np.issubdtype(expected.dtype, np.floating):
        d_rtol, d_atol = default_tolerance(got.dtype if np.issubdtype(got.dtype, np.floating)
                                           else expected.dtype)
        rtol = d_rtol if rtol is None else rtol
        atol = d_atol if atol is None else atol
        same = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        how = f"within rtol={rtol:g}, atol={atol:g}"
    else:
        same = got == expected
        how = "exactly"
    return np.atleast_1d(same), how


def check(got, expected, *, name="result", rtol=None, atol=None, show=5):
    """Raise MismatchError unless `got` equals `expected` (within tolerance for floats).

    Integers and booleans must match exactly; floats within ``rtol``/``atol``
    (by default from ``default_tolerance``). Returns a one-line summary.
    """
    got, expected = to_host(got), np.asarray(expected)
    if got.shape != expected.shape:
        raise MismatchError(f"{name}: shape {got.shape}, expected {expected.shape}")
    same, how = matching(got, expected, rtol=rtol, atol=atol)
    bad = ~same
    n_bad = int(bad.sum())
    if n_bad:
        g, e = np.atleast_1d(got), np.atleast_1d(expected)
        if bad.size == 1:
            raise MismatchError(f"{name}: the value differs from the reference ({how}): "
                                f"got {g.flat[0]}, expected {e.flat[0]}")
        where = np.argwhere(bad)[:show]
        lines = [f"  at {tuple(int(i) for i in w) if got.ndim > 1 else int(w[0])}: "
                 f"got {g[tuple(w)]}, expected {e[tuple(w)]}" for w in where]
        raise MismatchError(
            f"{name}: {n_bad} of {bad.size} values differ from the reference ({how});"
            f" first {len(lines)}:\n" + "\n".join(lines))
    if bad.size == 1:
        return f"{name}: the value matches the reference {how}"
    return f"{name}: all {bad.size:,} values match the reference {how}"
