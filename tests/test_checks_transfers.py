"""kernels.checks.transfers and the case it serves (kernels.checks.core.decoyed_case): a
host function given decoys on the host, whose copies to the device carry the case's
input, must return the case's result."""

import numpy as np
import pytest
from numba import cuda

from kernels.checks import core
from kernels.checks.transfers import real, rewired


@pytest.fixture
def pair(rng):
    case = rng.standard_normal(1001).astype(np.float32)
    return core.decoy(case, rng), case


@pytest.mark.parametrize("view", [lambda a: a, lambda a: a[100:357], lambda a: a[::3],
                                  lambda a: a[7:].view(np.int32),
                                  lambda a: a[:1000].reshape(40, 25).T])
def test_a_view_of_the_decoy_is_the_same_view_of_the_case(pair, view):
    decoy, case = pair
    found, wanted = real(view(decoy), decoy, case), view(case)
    assert found.dtype == wanted.dtype and found.shape == wanted.shape
    assert np.array_equal(found, wanted)


def test_copies_casts_runs_and_padding_of_the_decoy_carry_the_case(pair):
    decoy, case = pair
    assert np.array_equal(real(decoy.copy(), decoy, case), case)
    assert np.array_equal(real(decoy.astype(np.float64), decoy, case), case.astype(np.float64))
    assert np.array_equal(real(decoy[250:600].copy(), decoy, case), case[250:600])
    padded = np.concatenate([decoy, np.zeros(23, np.float32)])
    assert np.array_equal(real(padded, decoy, case), np.concatenate([case, np.zeros(23)]))
    assert real(decoy * 2, decoy, case) is None  # transformed beyond a cast: not rewired
    assert real(np.zeros(3, np.float32), decoy, case) is None


def test_a_run_found_in_more_than_one_place_is_not_rewired():
    decoy, case = np.array([1, 2, 1, 2, 5], np.int32), np.array([9, 8, 7, 6, 5], np.int32)
    assert real(np.array([1, 2], np.int32), decoy, case) is None
    assert np.array_equal(real(np.array([2, 5], np.int32), decoy, case), [6, 5])


def test_copies_to_the_device_are_rewired_within_and_only_within(pair):
    decoy, case = pair
    with rewired((decoy, 3), (case, 3)) as wiring:
        sent = cuda.to_device(decoy).copy_to_host()
        target = cuda.device_array(250, np.float32)
        target.copy_to_device(decoy[:250])
        plain = cuda.to_device(np.arange(5.0)).copy_to_host()
    assert np.array_equal(sent, case) and np.array_equal(target.copy_to_host(), case[:250])
    assert np.array_equal(plain, np.arange(5.0)) and wiring.count == 2
    assert np.array_equal(cuda.to_device(decoy).copy_to_host(), decoy)


def test_decoys_change_every_result_a_host_could_compute(rng):
    for values in (rng.standard_normal(500), rng.integers(-9, 9, 500).astype(np.int32),
                   np.frombuffer(b"to be or not to be " * 20, np.uint8).copy(),
                   rng.random(500) > 0.5):
        fake = core.decoy(values, rng)
        assert fake.shape == values.shape and fake.dtype == values.dtype
        assert not np.array_equal(np.sort(fake), np.sort(values))  # not a mere shuffle
    assert core.decoy(3, rng) == 3 and core.decoy("text", rng) == "text"


@cuda.jit
def _copy(x, y):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y[i] = x[i]


@cuda.jit
def _largest(x, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(out, 0, x[i])


def _marked_then_numpy(x, blocks):
    """A kernel leaves a mark; NumPy answers unless the mark is missing."""
    d_x = cuda.to_device(x)
    copy = cuda.device_array_like(d_x)
    _copy[blocks, 128](d_x, copy)
    return int(np.argmax(x)) if copy.copy_to_host()[0] == x[0] else -1


def _on_the_device(x, blocks):
    """The largest value found by a kernel, its index by the host from the device's copy."""
    d_x = cuda.to_device(x.astype(np.int64))
    out = cuda.to_device(np.array([np.iinfo(np.int64).min]))
    _largest[blocks, 128](d_x, out)
    return int(np.flatnonzero(d_x.copy_to_host() == out.copy_to_host()[0])[0])


def _host_array_to_the_kernel(x, blocks):
    out = np.array([np.iinfo(np.int64).min])
    _largest[blocks, 128](x.astype(np.int64), out)
    return int(np.flatnonzero(x == out[0])[0])


def _checks_its_input(x, blocks):
    if x.max() >= 1000:  # the case's inputs are below 1,000; its decoys are not
        raise ValueError("out of range")
    return _on_the_device(x, blocks)


@pytest.fixture
def cases(rng):
    x = rng.integers(-1000, 1000, 700).astype(np.int32)
    return [(f"n={x.size}", (x, 2), int(np.argmax(x))), ("again", (x, 2), int(np.argmax(x)))]


def test_a_result_computed_on_the_host_beside_a_marking_kernel_fails(cases):
    case = core.decoyed_case(core.calling(_marked_then_numpy), cases, None, None)
    assert case is not None and not case.passed and "did not return this case" in case.detail
    # the old case, run alone, is fooled by the mark
    assert core._unlaunched_case(core.calling(_marked_then_numpy), cases, None, None).passed


def test_a_result_from_the_device_passes(cases):
    case = core.decoyed_case(core.calling(_on_the_device), cases, None, None)
    assert case is not None and case.passed


@pytest.mark.parametrize("fn", [_host_array_to_the_kernel, _checks_its_input])
def test_where_nothing_was_rewired_or_decoys_fail_the_skipped_kernels_case_decides(cases, fn):
    assert core.decoyed_case(core.calling(fn), cases, None, None) is None
