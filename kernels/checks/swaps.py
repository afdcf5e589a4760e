"""Give an answer's kernels other data than its host holds: does its result follow?

An exercise that asks for a kernel is not passed by a kernel that copies data while the
host computes the result with NumPy. Skipping the kernels (kernels.checks.provenance's
unlaunched case) does not tell the two apart when a kernel only carries the host's
result to the output. This does: while a `swapped` is on, at each launch of a kernel
that is not Numba's own, every part of the case's input found among the kernel's arrays
is replaced, in those arrays, by the same part of another input of the same size and
kind (drawn by the judge). The host keeps the original. An answer whose kernels compute
the result returns the other input's result; one computed on the host from its own copy
returns the original's. What the host reads back from the device is kept too, so that a
kernel that hands the swapped-in input back unchanged, for the host to compute with, is
seen (`echoed`). kernels.checks.provenance.swapped decides, in the judge.

The input is found by its contents, as a kernel receives it: whole or in parts (chunks
on streams), its values in another type (an answer that converts before uploading) or
its bytes read as a wider type (one that reads four bytes at once), in host, device,
pinned or mapped arrays alike. A part must be MIN_RUN elements long and hold two
different values: a zeroed buffer or a counter is never taken for the input. A kernel's
writes to a host array are copied back as Numba's own transfer does; an element it did
not write keeps the host's value.
"""

import threading

import numpy as np

from kernels import SIMULATOR, after_numba_cuda

__all__ = []  # run by kernels.checks.launches and steps, not called by readers

MIN_RUN = 16  # elements: a shorter match could be chance
_launching = threading.local()  # .on: this thread is in a swapped launch


def _as(values, dtype):
    """`values` as elements of `dtype`, each way an answer may give them to a kernel: the
    values converted, and the bytes read as `dtype` (padded to whole elements)."""
    found = []
    if values.dtype == dtype or np.can_cast(values.dtype, dtype, "same_kind"):
        found.append(values.astype(dtype))
    if dtype.itemsize == values.dtype.itemsize and dtype != values.dtype:
        found.append(values.view(dtype))  # float bits as integers, signed as unsigned
    if dtype.itemsize != values.dtype.itemsize:
        raw = values.view(np.uint8)
        raw = np.concatenate([raw, np.zeros(-raw.size % dtype.itemsize, np.uint8)])
        found.append(raw.view(dtype))
    return found


def _bits(values):
    """Values compared as their bits (NaN equal to NaN, 0.0 not -0.0)."""
    return values.view(np.dtype(f"u{values.dtype.itemsize}"))


# A window's hash: its elements' bits times these, summed, modulo 2**64 (a match is
# then checked element by element)
_WEIGHTS = np.random.default_rng(0).integers(1, 2**63, MIN_RUN, dtype=np.uint64) | 1


def _hashes(bits):
    """The hash of each MIN_RUN-element window of `bits` (by where it starts), and
    whether the window holds two different values; vectorized, for inputs of millions."""
    wide = bits.astype(np.uint64)
    count = bits.size - MIN_RUN + 1
    hashes = np.zeros(count, np.uint64)
    for k, weight in enumerate(_WEIGHTS):
        hashes += wide[k:k + count] * weight
    changes = np.concatenate([[0], np.cumsum(bits[1:] != bits[:-1])])
    return hashes, changes[MIN_RUN - 1:] - changes[:count] > 0


class _Window:
    """Where each MIN_RUN-element window of one original (as one dtype) starts."""

    def __init__(self, original, alternate):
        self.original, self.alternate = _bits(original), alternate
        hashes, _ = _hashes(self.original)
        order = np.argsort(hashes, kind="stable")  # of equal windows, the first start first
        self.hashes, self.starts = hashes[order], order

    def runs(self, flat):
        """[(where in `flat`, where in the original, how long)] of the runs of `flat`
        (one dimension) that equal a part of the original, in order and apart: looked up
        at every element of a short array, at every MIN_RUN-th of a long one (where a
        run of 2 * MIN_RUN - 1 or more is always found), then followed to its ends."""
        bits = _bits(flat)
        if bits.size < MIN_RUN or not self.hashes.size:
            return []
        hashes, varied = _hashes(bits)
        # every element of a short array: a short input at an offset is found there too
        probes = np.arange(0, hashes.size, MIN_RUN if hashes.size > 64 * MIN_RUN else 1)
        at = np.minimum(np.searchsorted(self.hashes, hashes[probes]), self.hashes.size - 1)
        hit = (self.hashes[at] == hashes[probes]) & varied[probes]
        where, starts = probes[hit], self.starts[at[hit]]
        found, end = [], 0
        for i, start in zip(where.tolist(), starts.tolist()):
            if i < end:
                continue  # inside the run found last
            limit = min(i - end, start)  # how far back the run may begin
            before = bits[i - limit:i] != self.original[start - limit:start]
            back = limit - int(np.flatnonzero(before)[-1]) - 1 if before.any() else limit
            length = min(bits.size - i + back, self.original.size - start + back)
            same = bits[i - back:i - back + length] == self.original[
                start - back:start - back + length]
            length = length if same.all() else int(np.argmin(same))
            if length >= MIN_RUN:
                found.append((i - back, start - back, length))
                end = i - back + length
        return found

    def swap(self, flat):
        """Replace in `flat` every run that equals a part of the original by the
        alternate's same part; return [(where, how long)] of them."""
        runs = self.runs(flat)
        for i, start, length in runs:
            flat[i:i + length] = self.alternate[start:start + length]
        return [(i, length) for i, _, length in runs]


class swapped:
    """Within it, kernels.checks.launches has each launch swap (`launch`), in each of its
    arrays, every part of one of `originals` for the same part of its `alternates` (None
    where an argument has none): `found` counts the elements swapped, `threads` is the
    most threads of a launch, `echoed()` what a kernel handed back unchanged."""

    active = None  # the one in force, read by kernels.checks.launches

    def __init__(self, originals, alternates):
        self.pairs = [(np.ascontiguousarray(o).ravel(), np.ascontiguousarray(a).ravel())
                      for o, a in zip(originals, alternates)
                      if isinstance(o, np.ndarray) and isinstance(a, np.ndarray)
                      and a.shape == o.shape and a.dtype == o.dtype
                      and o.dtype.kind in "biuf" and o.size >= MIN_RUN]
        self.windows, self.found, self.read_back, self.threads = {}, 0, [], 0
        self.in_place = []  # (byte address, the bits put there) of each run swapped in place
        self.alive = []  # the device arrays of in_place

    def __enter__(self):
        swapped.active = self
        return self

    def __exit__(self, *exc):
        swapped.active = None

    def _windows(self, dtype, swapped_in=False):
        """The windows of each original (of each alternate: `swapped_in`) as `dtype`."""
        key = (dtype.str, swapped_in)
        if key not in self.windows:
            self.windows[key] = [
                _Window(o, a) for original, alternate in self.pairs
                for o, a in zip(_as(alternate if swapped_in else original, dtype),
                                _as(original if swapped_in else alternate, dtype))
                if o.size >= MIN_RUN]
        return self.windows[key]

    def _swap(self, flat, address=None, device=None):
        """Swap the input in `flat`; where it is `device` memory at `address`, remember
        where (and keep the array, so that no other takes its place while the swap
        lasts): what a kernel never moved from there is not handed back (`echoed`)."""
        if flat.dtype.kind not in "biuf":
            return 0
        runs = [run for window in self._windows(flat.dtype) for run in window.swap(flat)]
        if address is not None and runs:
            self.alive.append(device)
            self.in_place += [(address + i * flat.itemsize, _bits(flat[i:i + length]).copy())
                              for i, length in runs]
        done = sum(length for _, length in runs)
        self.found += done
        return done

    def echoed(self):
        """How many elements the host read back from the device (by copy_to_host, or a
        kernel's writes to a host array) are the swapped-in data, unchanged, where a
        kernel put them: a kernel that hands the host its input to compute with. Counted
        in each array that holds more than `threads` of them (more than one for each
        thread of the largest launch: a thread with one element to reduce rightly hands
        it back as its partial result), and in all. Read when the answer has returned (a
        copy on a stream lands by then)."""
        total = everywhere = 0
        for host, written, address in self.read_back:
            flat, echoed = np.ravel(host), 0
            if flat.dtype.kind not in "biuf":
                continue
            for window in self._windows(flat.dtype, swapped_in=True):
                for i, _, length in window.runs(flat):  # only what a kernel wrote counts
                    moved = (np.ones(length, bool) if written is None
                             else written[i:i + length].copy())
                    if address is not None:  # not what still lies where it was swapped in
                        moved &= ~self._in_place(flat, i, length, address)
                    echoed += int(moved.sum())
            total += echoed if echoed > self.threads else 0
            everywhere += echoed
        return total, everywhere

    def _in_place(self, flat, i, length, address):
        """Which of flat[i:i + length] (read back from device memory at `address`) still
        hold what was swapped in there."""
        at = address + (i + np.arange(length)) * flat.itemsize
        bits, still = _bits(flat[i:i + length]), np.zeros(length, bool)
        for first, values in self.in_place:
            inside = (at >= first) & (at < first + values.nbytes)
            if values.itemsize != flat.itemsize:
                still |= inside  # read as another type: taken as still there
                continue
            offset = (at[inside] - first) // flat.itemsize
            still[inside] |= values[offset] == bits[inside]
        return still

    def launch(self, launch, kernel, args, threads):
        """launch(kernel, *args), of `threads` threads in all, with the input swapped in
        the arrays of `args`."""
        self.threads = max(self.threads, threads)
        after = []
        _launching.on = True  # what this reads, and Numba's copies back, are not the host's
        try:
            if not SIMULATOR and any(hasattr(a, "copy_to_host") for a in args):
                from numba import cuda
                cuda.synchronize()  # what queued copies write must be there to be read
            args = [self._argument(arg, after) for arg in args]
            return launch(kernel, *args)
        finally:
            _launching.on = False
            for step in after:
                step()

    def _argument(self, arg, after):
        from numba.cuda.args import ArgHint  # cuda.In, cuda.Out, cuda.InOut

        hint = arg.value if isinstance(arg, ArgHint) else None
        host = hint if isinstance(hint, np.ndarray) else arg
        if isinstance(host, np.ndarray) and host.ndim and host.dtype.kind in "biuf":
            copy = np.array(host)  # host memory: the kernel gets a copy, input swapped
            self._swap(copy.reshape(-1))
            before = copy.copy()

            def back():  # what the kernel wrote, as Numba's transfer copies it back
                # (under cuda.In nothing comes back to `copy`: nothing is written)
                written = _bits(copy.reshape(-1)) != _bits(before.reshape(-1))
                host.reshape(-1)[written] = copy.reshape(-1)[written]
                self.read_back.append((copy, written, None))
            after.append(back)
            return type(arg)(copy) if host is hint else copy
        device = getattr(arg, "_ary", None) if SIMULATOR else arg
        if SIMULATOR and isinstance(device, np.ndarray) and device.ndim:
            flat = device.ravel()
            if self._swap(flat, _address(arg) if device.flags.c_contiguous else None, arg):
                device[...] = flat.reshape(device.shape)
        elif not SIMULATOR and hasattr(arg, "copy_to_host") and getattr(
                arg, "is_c_contiguous", lambda: False)() and arg.size:
            flat = arg.copy_to_host().reshape(-1)
            if self._swap(flat, _address(arg), arg):
                arg.copy_to_device(flat.reshape(arg.shape))
        return arg


def _address(device_array):
    """Where a device array's first element lies (the simulator's: in host memory)."""
    if SIMULATOR:
        return device_array._ary.ctypes.data
    return device_array.device_ctypes_pointer.value


def _install():
    """Keep, while a swap is on, each array the host copies back from the device."""
    if SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as Device
    else:
        from numba.cuda.cudadrv.devicearray import DeviceNDArray as Device
    copy_to_host = Device.copy_to_host

    def kept(self, *args, **kwargs):
        host = copy_to_host(self, *args, **kwargs)
        if swapped.active is not None and isinstance(host, np.ndarray) and not getattr(
                _launching, "on", False):
            swapped.active.read_back.append(
                (host, None, _address(self) if self.is_c_contiguous() else None))
        return host

    Device.copy_to_host = kept


after_numba_cuda(_install)
