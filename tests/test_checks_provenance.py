"""Whether a host function's result comes from its kernels: the swapped case (the
unlaunched case is tested with run_cases, in tests/test_checks_core.py)."""

import re

import numpy as np
import pytest
from numba import cuda

from kernels.checks import core, provenance


def _swapped(answer, cases):
    """The swapped case's fields for `answer` (a host function, run here)."""
    return provenance.swapped(core.calling(answer), cases, None, None, 30.0,
                              np.random.default_rng(1))


@cuda.jit
def _affine(x, y):  # y = 3x + 1
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y[i] = 3 * x[i] + 1


def _on_device(x):
    y = cuda.device_array(x.size, np.int64)
    _affine[4, 64](cuda.to_device(x), y)
    return y.copy_to_host()


def _in_chunks_on_streams(x):
    y = np.empty(x.size, np.int64)
    for chunk in np.array_split(np.arange(x.size), 3):
        stream = cuda.stream()
        d_y = cuda.device_array(chunk.size, np.int64, stream=stream)
        _affine[2, 64, stream](cuda.to_device(x[chunk], stream=stream), d_y)
        d_y.copy_to_host(y[chunk[0]:chunk[-1] + 1], stream=stream)
        stream.synchronize()
    return y


def _converted_first(x):
    return _on_device(x.astype(np.int64))


def _host_beside_a_kernel(x):
    _on_device(x)  # launched, and its result dropped
    return 3 * x.astype(np.int64) + 1


def _kernel_hands_back_the_input(x):
    y = cuda.device_array(x.size, np.int64)
    _affine[4, 64](cuda.to_device(x), y)  # a kernel of the right kind, as a decoy
    copy = cuda.device_array_like(x)
    _copy_kernel[1, 64](cuda.to_device(x), copy)  # fewer threads than elements
    return 3 * copy.copy_to_host().astype(np.int64) + 1


def _kernel_carries_the_host_result(x):
    return _carry(3 * x.astype(np.int64) + 1)


@cuda.jit
def _copy_kernel(source, target):
    for i in range(cuda.grid(1), source.size, cuda.gridsize(1)):
        target[i] = source[i]


def _carry(values):
    out = cuda.device_array_like(values)
    _copy_kernel[4, 64](cuda.to_device(values), out)
    return out.copy_to_host()


def _affine_cases():
    rng = np.random.default_rng(5)
    return [(f"n={n}", x, 3 * x.astype(np.int64) + 1) for n in (300, 150)
            for x in [rng.integers(-1000, 1000, n, dtype=np.int32)]]


@pytest.mark.parametrize("answer", [_on_device, _in_chunks_on_streams, _converted_first])
def test_a_result_the_kernels_compute_follows_their_data(answer):
    case = _swapped(answer, _affine_cases())
    assert case["passed"] and not case.get("grader_limit")


@pytest.mark.parametrize("answer, words, flagged", [
    (_host_beside_a_kernel, r"and (14\d|150) of the \1 values that other data changes of "
     "your result came out as for the original input", False),
    (_kernel_hands_back_the_input, r"handed the input back to the host unchanged \(300 ",
     False),
    (_kernel_carries_the_host_result, "found no part of the input", True)])
def test_a_result_computed_on_the_host_fails(answer, words, flagged):
    """Beside a kernel, from the input the kernels handed back, or carried to the output
    by a kernel: each fails (the input handed back, on the case of 300: its decoy's 256
    threads had one for each element of 150); a result whose input the grader found
    nowhere is also flagged for the instructor."""
    case = _swapped(answer, _affine_cases())
    assert not case["passed"] and re.search(words, case["detail"]), case["detail"]
    assert bool(case["grader_limit"]) == flagged


@cuda.jit
def _per_thread_sums(x, partials):
    t = cuda.grid(1)
    total = 0
    for i in range(t, x.size, cuda.gridsize(1)):
        total += x[i]
    partials[t] = total


def _partials_summed_on_the_host(x):
    partials = cuda.device_array(128, np.int64)
    _per_thread_sums[2, 64](cuda.to_device(x), partials)
    return partials.copy_to_host().sum()


def _copied_and_summed_on_the_host(x):
    copy = cuda.device_array_like(x)
    _copy_kernel[2, 64](cuda.to_device(x), copy)
    return copy.copy_to_host().astype(np.int64).sum()


@cuda.jit
def _per_thread_extremes(x, lows, highs):
    t = cuda.grid(1)
    low, high = x[t % x.size], x[t % x.size]
    for i in range(t, x.size, cuda.gridsize(1)):
        low, high = min(low, x[i]), max(high, x[i])
    lows[t], highs[t] = low, high


def _extremes_finished_on_the_host(x):
    lows, highs = (cuda.device_array(128, np.int32) for _ in range(2))
    _per_thread_extremes[2, 64](cuda.to_device(x), lows, highs)
    return np.array([lows.copy_to_host().min(), highs.copy_to_host().max()])


def _sum(x):
    return x.astype(np.int64).sum()


@pytest.mark.parametrize("answer, reference, passed", [
    (_partials_summed_on_the_host, _sum, True),
    (_extremes_finished_on_the_host, lambda x: np.array([x.min(), x.max()]), True),
    (_copied_and_summed_on_the_host, _sum, False)])
def test_partial_results_handed_back_are_told_from_the_input(answer, reference, passed):
    """128 threads reduce 100 elements: each thread's partial sum (or lowest and highest
    value, two arrays of them) is its one element, as a copy of the input would be; the
    next case, of 300, tells them apart."""
    rng = np.random.default_rng(6)
    cases = [(f"n={n}", x, reference(x)) for n in (300, 100)
             for x in [rng.integers(-1000, 1000, n, dtype=np.int32)]]
    case = _swapped(answer, cases)
    assert case["passed"] == passed
    assert passed or "handed the input back to the host unchanged (300 " in case["detail"]
