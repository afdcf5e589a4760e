"""Finding a case's input among a kernel's arrays, and swapping other data in."""

import numpy as np
import pytest
from numba import cuda

from kernels.checks import launches, swaps


def _swapped(original, alternate, kernel_array):
    """kernel_array (1-D, a copy) with the input found there swapped."""
    flat = np.array(kernel_array)
    with swaps.swapped((original,), (alternate,)) as swap:
        count = swap._swap(flat)
    return flat, count, swap


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    original = rng.integers(0, 256, 1_001, dtype=np.uint8)
    return original, rng.integers(0, 256, 1_001, dtype=np.uint8)


def test_the_whole_input_and_a_chunk_of_it_are_found(data):
    original, alternate = data
    flat, count, _ = _swapped(original, alternate, original)
    assert count == original.size and (flat == alternate).all()
    flat, count, _ = _swapped(original, alternate, original[333:700])  # a stream's chunk
    assert count == 367 and (flat == alternate[333:700]).all()


def test_converted_values_and_bytes_read_wider_are_found(data):
    original, alternate = data
    flat, count, _ = _swapped(original, alternate, original.astype(np.int32))
    assert count == original.size and (flat == alternate.astype(np.int32)).all()
    padded = np.concatenate([original, np.zeros(3, np.uint8)])  # 1,004 bytes: 251 words
    flat, count, _ = _swapped(original, alternate, padded.view(np.uint32))
    assert count >= 250  # the last word holds padding as well as the input's last byte
    assert (flat.view(np.uint8)[:1_000] == alternate[:1_000]).all()


def test_what_is_not_the_input_is_left_alone(data):
    original, alternate = data
    rng = np.random.default_rng(4)
    for other in (np.zeros(2_000, np.uint8),  # a zeroed buffer
                  np.full(64, original[10], np.uint8),  # one repeated value
                  original[100:100 + swaps.MIN_RUN - 1],  # too short to tell
                  rng.integers(0, 256, 1_001, dtype=np.uint8)):  # other data
        flat, count, _ = _swapped(original, alternate, other)
        assert count == 0 and (flat == other).all()


def test_a_run_ends_where_the_input_ends(data):
    original, alternate = data
    mixed = np.concatenate([np.full(7, 9, np.uint8), original[:40], [255 - original[40]],
                            original[41:90]])
    flat, count, _ = _swapped(original, alternate, mixed)
    assert count == 40 + 49
    assert (flat[:7] == 9).all() and flat[47] == mixed[47]
    assert (flat[7:47] == alternate[:40]).all() and (flat[48:] == alternate[41:90]).all()


@cuda.jit
def _copy(source, target):
    for i in range(cuda.grid(1), source.size, cuda.gridsize(1)):
        target[i] = source[i]


def test_a_launch_sees_the_swapped_input_and_the_host_keeps_the_original(data):
    """A host array passed to a kernel, a device array and a chunk of one: the kernel
    reads the other data, the host's input is untouched, and what the kernel wrote to a
    host array comes back as Numba's own transfer brings it."""
    original, alternate = data
    host_input = original.copy()
    out = np.zeros_like(original)
    device = cuda.to_device(original)
    device_out = cuda.device_array_like(original)
    before = launches.counts()
    with swaps.swapped((original,), (alternate,)) as swap:  # (launches swaps at each launch)
        _copy[2, 64](host_input, out)
        _copy[2, 64](device[100:600], device_out[100:600])
    assert (launches.counts() - before)[launches.YOURS] == 2
    assert (host_input == original).all()  # the host keeps its copy
    assert (out == alternate).all()  # the kernel read the other data and wrote it back
    assert (device_out.copy_to_host()[100:600] == alternate[100:600]).all()
    assert swap.found == original.size + 500
    # the kernel's writes to `out`, read on the host (a write of the 0 it held is no write)
    assert swap.echoed() == (np.count_nonzero(alternate),) * 2  # 1,001 - zeros > 128 threads
    assert swaps.swapped.active is None


def test_arrays_passed_as_cuda_in_out_and_inout_are_swapped_as_numba_moves_them(data):
    """cuda.In(x): the kernel reads the other data and nothing comes back to x;
    cuda.InOut(x) and cuda.Out(x): what the kernel wrote comes back to x."""
    original, alternate = data
    host_input = original.copy()
    outs = {hint: np.zeros_like(original) for hint in (cuda.In, cuda.Out, cuda.InOut)}
    with swaps.swapped((original,), (alternate,)) as swap:
        for hint, out in outs.items():
            _copy[2, 64](cuda.In(host_input), hint(out))
    assert (host_input == original).all()  # the host keeps its copy
    assert not outs.pop(cuda.In).any()  # In: what the kernel wrote stays on the device
    for out in outs.values():
        assert (out == alternate).all()  # the kernel read the other data, wrote it back
    assert swap.found == 3 * original.size


def test_what_the_host_copies_back_unchanged_is_counted(data):
    """The input read back as the kernel copied it counts; what the host wrote to the
    device itself, read back, does not."""
    original, alternate = data
    for hand_back in (True, False):
        device, copy = cuda.to_device(original), cuda.to_device(np.zeros_like(original))
        with swaps.swapped((original,), (alternate,)) as swap:
            _copy[2, 64](device, copy)
            if hand_back:
                copy.copy_to_host()
            else:
                copy.copy_to_device(original)  # the host's own copy, not the kernel's
                copy.copy_to_host()
        assert swap.found == original.size
        assert swap.echoed() == ((original.size,) * 2 if hand_back else (0, 0))


def test_what_no_kernel_moved_is_not_handed_back_and_pieces_add_up(data):
    """An array whose input was swapped in place and read back as it lies (a fold that
    left half of it untouched) hands nothing back; a copy handed back in three pieces,
    each larger than the launch's threads, is counted whole; per-thread results (pieces
    of no more elements than threads) are told as handed back, not counted."""
    original, alternate = data
    device = cuda.to_device(original)
    with swaps.swapped((original,), (alternate,)) as swap:
        _copy[2, 64](device[:500], device[500:1000])  # moves the first half only
        device.copy_to_host()
    # the moved half (but where the value moved there is the one swapped in there); not
    # the half still in place
    moved = int((alternate[:500] != alternate[500:1000]).sum())
    assert 480 < moved and swap.echoed() == (moved, moved)
    pieces = [cuda.to_device(np.zeros(334, np.uint8)) for _ in range(3)]
    with swaps.swapped((original,), (alternate,)) as swap:
        source = cuda.to_device(original)
        for k, piece in enumerate(pieces):
            _copy[2, 64](source[334 * k:334 * k + piece.size - (k == 2)], piece)
            piece.copy_to_host()
    assert swap.echoed() == (1_001, 1_001)
    with swaps.swapped((original,), (alternate,)) as swap:
        partials = cuda.to_device(np.zeros(1_024, np.uint8))
        _copy[8, 128](cuda.to_device(original), partials)  # a thread for each element
        partials.copy_to_host()
    assert swap.echoed() == (0, 1_001)
