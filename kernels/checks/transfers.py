"""What an answer copies to the device, rewired: the case that asks whether a host
function's result comes from its kernels (kernels.checks.core.decoyed_case).

A host function that launches a decoy kernel and computes its result with NumPy can
tell the run whose launches are skipped (its kernel leaves no mark) and be wrong only
then. So the checker instead gives the function other inputs (decoys) on the host, and
wherever the function copies a decoy, or a part, a copy or a cast of one, to the device,
the device receives the case's own input there. Its kernels then work on the case's
input, the host code sees only the decoys, and the result must be the case's: a
result the host computed follows the decoys, whatever marks its kernels left.

Only copies to the device are rewired (``cuda.to_device``, ``copy_to_device``): a
function that gives a kernel a host array directly, or copies a decoy transformed
beyond a cast, copies nothing rewired, and the checker falls back to skipping the
launches (kernels.checks.core).
"""

import threading

import numpy as np
from numpy.lib.array_utils import byte_bounds

from kernels import SIMULATOR

__all__ = []  # the checkers' answer steps use it (kernels.checks.steps)


def _within(part, whole):
    """Whether every byte of `part` lies in `whole`'s memory."""
    low, high = byte_bounds(part)
    whole_low, whole_high = byte_bounds(whole)
    return whole_low <= low and high <= whole_high


def _chunk(values, found):
    """The offset where `values` (1-D) holds `found` (1-D, shorter) as a run, if there is
    exactly one; else None."""
    size = found.size
    starts = np.flatnonzero(values[:values.size - size + 1] == found[0])[:64]
    hits = [s for s in starts if np.array_equal(values[s:s + size], found)]
    return hits[0] if len(hits) == 1 else None


def real(array, decoy, case):
    """What the device receives where the answer copies `array` and the checker gave it
    `decoy` in place of the case's input `case` (same shape and type): the matching part
    of `case` where `array` is `decoy`, a view of it, a copy or a cast of it, a run of
    it, or it padded at the end; else None."""
    if not isinstance(array, np.ndarray) or array.size == 0:
        return None
    if np.shares_memory(array, decoy) and _within(array, decoy):  # a view, of any type
        offset = array.__array_interface__["data"][0] - decoy.__array_interface__["data"][0]
        return np.ndarray(array.shape, array.dtype, buffer=case, offset=offset,
                          strides=array.strides)
    try:
        values, wanted = decoy.astype(array.dtype).ravel(), case.astype(array.dtype).ravel()
    except (TypeError, ValueError):
        return None
    flat = array.ravel()
    if array.size == decoy.size and np.array_equal(flat, values):
        return wanted.reshape(array.shape)
    if array.ndim == 1 and array.size < decoy.size:
        start = _chunk(values, flat)
        return None if start is None else wanted[start:start + array.size].copy()
    if array.ndim == 1 and array.size > decoy.size and np.array_equal(
            flat[:decoy.size], values):
        padded = array.copy()
        padded[:decoy.size] = wanted
        return padded
    return None


class rewired:
    """Within it, each copy to the device of one of `decoys` (or of a part, copy or cast
    of one, `real`) copies the matching part of the `cases` array beside it instead;
    `count` says how many copies were rewired."""

    def __init__(self, decoys, cases):
        self.pairs = [(d, c) for d, c in zip(decoys, cases) if isinstance(d, np.ndarray)]
        self.count = 0
        self.lock = threading.Lock()

    def swap(self, array):
        for decoy, case in self.pairs:
            found = real(array, decoy, case)
            if found is not None:
                with self.lock:
                    self.count += 1
                return found
        return array

    def __enter__(self):
        from numba import cuda

        if SIMULATOR:
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as Device
        else:
            from numba.cuda.cudadrv.devicearray import DeviceNDArray as Device
        to_device, copy_to_device = cuda.to_device, Device.copy_to_device
        swap = self.swap

        def rewired_to_device(ary, *args, **kwargs):
            return to_device(swap(ary), *args, **kwargs)

        def rewired_copy_to_device(self, ary, *args, **kwargs):
            return copy_to_device(self, swap(ary), *args, **kwargs)

        self.saved = [(cuda, "to_device", to_device), (Device, "copy_to_device", copy_to_device)]
        cuda.to_device = rewired_to_device
        Device.copy_to_device = rewired_copy_to_device
        return self

    def __exit__(self, *exc):
        for owner, name, value in self.saved:
            setattr(owner, name, value)
