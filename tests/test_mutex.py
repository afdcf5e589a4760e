import re
import time

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import checks, locks, size
from kernels import mutex as m
from kernels.checks.core import TimeLimitExceeded, call_with_time_limit
from kernels.harness import MismatchError, check
from answers import solution
from ptx import assert_compiles

s = solution("mutex")  # as a student hands it in: its launches count

LOCKED = "void(float32[::1], float32[::1], int32[::1], int32[::1], int64)"
DOT_LOCKED = "void(float32[::1], float32[::1], float32[::1], int32[::1], int32[::1], int64)"
PTX_SIGNATURES = {
    "add_one_mutex_kernel": ["void(int64[::1], int32[::1], int32[::1], int64)"],
    "add_one_atomic_kernel": ["void(int64[::1])"],
    "thread_dot": ["float32(float32[::1], float32[::1])"],
    "block_sum": ["void(float32[::1])"],
    "block_sum_tid_plus_one": ["void(float32[::1])"],
    "block_product": ["void(float32[::1])"],
    "dot_partial_kernel": ["void(float32[::1], float32[::1], float32[::1])"],
    "dot_mutex_kernel": [DOT_LOCKED],
    "dot_atomic_kernel": ["void(float32[::1], float32[::1], float32[::1])"],
    "dot_last_block_kernel": ["void(float32[::1], float32[::1], float32[::1], int32[::1], "
                              "float32[::1])"],
    "dot_mutex_tid_plus_one_kernel": [DOT_LOCKED],
    "product_mutex_kernel": [LOCKED],
    "sum_positive_early_return_kernel": [LOCKED],
}

SIZES = (1, 17, 1001)  # none divides the block size
LAUNCHES = ({"blocks": 1, "threads": 32}, {"blocks": 3, "threads": 64}, {})


def vectors(rng, n):
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


def check_dot(got, a, b, name="dot", **launch):
    """got against a . b, within the rounding bound of the launch that computed it."""
    return check(got, m.dot_reference(a, b), name=name, rtol=0,
                 atol=m.dot_tolerance(a, b, **launch))


def test_add_one_mutex_counts_every_thread_exactly():
    assert m.add_one_mutex(10, 16).value() == 160
    assert m.add_one_mutex(3, 7).value() == 21
    assert m.add_one_atomic(10, 16).value() == 160


def test_device_total_is_reused_from_zero():
    counter = m.add_one_mutex(10, 16)
    assert m.add_one_mutex(4, 16, into=counter).value() == 64  # reset, not accumulated


@pytest.mark.parametrize("version", sorted(m.VERSIONS))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("launch", LAUNCHES, ids=["1x32", "3x64", "default"])
def test_dot_matches_reference(version, n, launch, rng):
    if not launch and n == 1001:
        launch = {"threads": 64}  # the default 256 threads cost seconds on the simulator
    a, b = vectors(rng, n)
    check_dot(m.VERSIONS[version](a, b, **launch).value(), a, b, version, **launch)


def test_dot_last_block_leaves_its_total_at_zero_for_the_next_call(rng):
    total = locks.DeviceTotal(np.float32).reset()
    for n in (4_099, 17, 1):  # a large total first: one not handed back would show
        a, b = vectors(rng, n)
        check_dot(m.dot_last_block(a, b, blocks=3, threads=64, into=total).value(), a, b,
                  f"n={n}")


def test_dot_on_device_arrays(rng):
    a, b = vectors(rng, 999)
    da, db = cuda.to_device(a), cuda.to_device(b)
    for fn in m.VERSIONS.values():
        check_dot(fn(da, db, blocks=2, threads=32).value(), a, b, fn.__name__, blocks=2,
                  threads=32)


def test_tolerance_grows_with_size_and_catches_a_lost_term(rng):
    a, b = vectors(rng, 1001)
    assert m.dot_tolerance(a[:10], b[:10]) < m.dot_tolerance(a, b)
    ref = m.dot_reference(a, b)
    with pytest.raises(MismatchError):
        check_dot(np.float32(ref - a[500] * b[500]), a, b)


def test_tid_plus_one_bug_is_caught_and_fixed(rng):
    a, b = vectors(rng, 1001)
    with pytest.raises(MismatchError):
        check_dot(m.dot_mutex_tid_plus_one(a, b, blocks=3, threads=64).value(), a, b,
                  blocks=3, threads=64)
    check_dot(m.dot_mutex(a, b, blocks=3, threads=64).value(), a, b, blocks=3, threads=64)


def test_unzeroed_mutex_bug_is_caught_and_fixed(rng):
    a, b = vectors(rng, 500)
    with m.stale_device_memory(1):
        with pytest.raises(locks.LockTimeout, match="never released"):
            m.dot_mutex_unzeroed_mutex(a, b, blocks=2, threads=32).value()
        # the course's DeviceTotal zeroes what it allocates: immune to leftovers
        check_dot(m.dot_mutex(a, b, blocks=2, threads=32).value(), a, b, blocks=2, threads=32)
    assert cuda.device_array is not None and "leftover" not in repr(cuda.device_array)


def never_released(max_spins):
    """A dot_mutex whose mutex starts taken: no thread can ever get the lock."""
    a = np.ones(64, np.float32)
    total = locks.DeviceTotal(np.float32).reset()
    total.mutex = cuda.to_device(np.ones(1, np.int32))
    m.dot_mutex_kernel[2, 32](a, a, total.total, total.mutex, total.failed, max_spins)
    return total.value()


def test_bounded_spin_reports_a_lock_never_released():
    start = time.perf_counter()
    with pytest.raises(locks.LockTimeout, match="hung the GPU"):
        call_with_time_limit(never_released, locks.MAX_SPINS, seconds=60)
    assert time.perf_counter() - start < 30


@pytest.mark.skipif(not kernels.SIMULATOR, reason="on a GPU the abandoned kernel would "
                    "hold up the tests after it; the bounded spin is tested there")
def test_time_limit_fires_on_a_lock_never_released():
    # 100k tries take a fraction of a second, longer than the limit set here
    with pytest.raises(TimeLimitExceeded, match="deadlock"):
        call_with_time_limit(never_released, 100_000, seconds=0.02)
    # The kernel runs on in its thread; the simulator swaps the module's `cuda` for
    # its fake while a kernel runs, so wait until it is done before going on.
    deadline = time.perf_counter() + 60
    while m.cuda is not cuda and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert m.cuda is cuda


def test_product_mutex_matches_reference(rng):
    x = rng.uniform(0.9, 1.1, 1001).astype(np.float32)
    for launch in LAUNCHES[:2]:
        check(m.product_mutex(x, **launch).value(), m.product_reference(x), rtol=1e-5)


def test_early_return_keeps_the_lock(rng):
    x = rng.standard_normal(1001).astype(np.float32)
    check(m.sum_positive_early_return(x, blocks=3, threads=64).value(),
          x[x > 0].astype(np.float64).sum(), rtol=1e-5)
    with pytest.raises(locks.LockTimeout):
        m.sum_positive_early_return(-np.abs(x), blocks=3, threads=64).value()


def test_checker_sum_positive():
    # that each solution passes its checker: tests/test_grading.py (every exercise)
    # the chapter's buggy kernel is the course's own, so it is not the reader's answer
    report = checks.lock_sum_positive(lambda x: m.sum_positive_early_return(x).value())
    assert not report.passed and "no kernel of yours was launched" in str(report)
    report = checks.lock_sum_positive(lambda x: x[x > 0].sum())  # right, but on the host
    assert not report.passed and "no kernel of yours was launched" in str(report)


def test_checker_argmax():
    def last_of_ties(x):
        value = x.max()
        return value, int(np.flatnonzero(x == value)[-1])

    report = checks.lock_argmax(last_of_ties)
    assert not report.passed and "ties" in str(report)


def test_checker_bin_product():
    def starts_at_zero(keys, values, nbins):
        return s.bin_product(keys, values, nbins) * 0

    assert not checks.lock_bin_product(starts_at_zero).passed


BAD_CALLS = {
    "wrong dtype": (lambda a, b: m.dot_mutex(a, b.astype(np.float64)), TypeError,
                    "dtype float64"),
    "mismatched shapes": (lambda a, b: m.dot_atomic(a, b[:5]), ValueError, "shapes must match"),
    "2-D": (lambda a, b: m.dot_partial(a.reshape(3, 7), b.reshape(3, 7)), ValueError, "1-D"),
    "empty": (lambda a, b: m.dot_mutex(a[:0], b[:0]), ValueError, "empty"),
    "host and device": (lambda a, b: m.dot_mutex(cuda.to_device(a), b), ValueError,
                        "on the host or all on the device"),
    "threads not a power of two": (lambda a, b: m.dot_mutex(a, b, threads=48), ValueError,
                                   "power of two"),
    "too many threads": (lambda a, b: m.dot_atomic(a, b, threads=2048), ValueError,
                         "at most 1024"),
    "zero blocks": (lambda a, b: m.dot_partial(a, b, blocks=0), ValueError,
                    "blocks must be at least 1"),
    "zero spins": (lambda a, b: m.dot_mutex(a, b, max_spins=0), ValueError,
                   "max_spins must be at least 1"),
    "float spins": (lambda a, b: m.dot_mutex(a, b, max_spins=1e6), TypeError,
                    "max_spins must be an int"),
    "into of the wrong kind": (lambda a, b: m.dot_mutex(a, b, into=np.zeros(1)), TypeError,
                               "into must be a DeviceTotal"),
    "partials for other blocks": (lambda a, b: m.dot_partial(a, b, blocks=2,
                                                             into=m.BlockPartials(3)),
                                  TypeError, "BlockPartials for 2 blocks"),
    "product of ints": (lambda a, b: m.product_mutex(a.astype(np.int32)), TypeError,
                        "accepted: float32"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    a, b = vectors(rng, 21)
    with pytest.raises(error, match=re.escape(words)):
        call(a, b)


def test_compiles_to_ptx():
    assert_compiles("mutex")


@pytest.mark.gpu
def test_full_size_on_gpu():
    rng = np.random.default_rng(3)
    a, b = vectors(rng, size("dot"))
    da, db = cuda.to_device(a), cuda.to_device(b)
    for fn in m.VERSIONS.values():
        check_dot(fn(da, db).value(), a, b, fn.__name__)
    for blocks in (32, 10_000):
        check_dot(m.dot_mutex(da, db, blocks=blocks).value(), a, b, f"{blocks} blocks",
                  blocks=blocks)
    with pytest.raises(MismatchError):
        check_dot(m.dot_mutex_tid_plus_one(da, db).value(), a, b)
    # A long product of float32 values hovering near 1 drifts by percents (each
    # rounding leans the same way): keep the product short and away from 1.
    x = rng.uniform(0.9, 1.1, 10_001).astype(np.float32)
    check(m.product_mutex(cuda.to_device(x)).value(), m.product_reference(x), rtol=1e-4)


@pytest.mark.gpu
def test_lock_is_exact_under_heavy_contention_on_gpu():
    # 100,000 lock holders; a missing fence or a stale cached read would lose counts
    assert m.add_one_mutex(100_000, 64).value() == 6_400_000


@pytest.mark.gpu
def test_lock_failures_are_reported_on_gpu(rng):
    start = time.perf_counter()
    with pytest.raises(locks.LockTimeout):
        call_with_time_limit(never_released, locks.MAX_SPINS, seconds=60)
    assert time.perf_counter() - start < 20
    a, b = vectors(rng, 100_000)
    with m.stale_device_memory(1):
        with pytest.raises(locks.LockTimeout):
            m.dot_mutex_unzeroed_mutex(a, b).value()


def test_the_checkers_looping_size_is_past_twice_the_course_grid_of_this_device(monkeypatch):
    """On a GPU, kernels.checks.mutex.loops() follows the device (four blocks of THREADS
    per SM, doubled): every thread of the course's launch loops, at a size a correct
    lock-per-element answer finishes within a case's time (1,000,003 did not)."""
    from kernels.checks import mutex as checks_mutex

    monkeypatch.setattr(checks_mutex, "SIMULATOR", False)
    for sms in (40, 132):
        monkeypatch.setattr(checks_mutex, "sm_count", lambda sms=sms: sms)
        grid = 4 * sms * m.THREADS
        assert 2 * grid < checks_mutex.loops() < 2 * grid + m.THREADS
        assert checks_mutex.loops() % m.THREADS  # not a whole number of blocks
