"""Every tolerance of the course, proven both ways.

For each tolerance: the largest legitimate rounding difference (the same sum added in
other orders, emulated on the CPU the way the kernels add) passes, and the smallest
error its text says it catches (a lost value, a lost block, a dropped term, a wrong
bin) fails. The GPU cases at the end do the same with the real kernels at full size.
"""

import math
import pathlib

import numpy as np
import pytest
from numba import cuda

from kernels import checks
from kernels import matmul as mm
from kernels import mutex as m
from kernels.checks import matmul as cmm
from kernels.checks import mutex as cm
from kernels.checks import reduction as cr
from kernels.harness import MismatchError, check, default_tolerance
from answers import solution

# the solutions as a student hands them in: checkers count their kernels' launches
sh, sm, sr = solution("histogram"), solution("mutex"), solution("reduction")

H100_BLOCKS = 4 * 132  # the launchers' default_blocks on the recordings' H100
PARTIAL_ORDERS = ("data", "reversed", "largest first", "smallest first", "random",
                  "pairwise")


def kernel_sum(x, blocks, threads, dtype, order="data", compensated=False):
    """x summed in `dtype` the way the course's reductions add: each thread's
    grid-stride slice in order (Kahan-compensated if asked), the block's halving tree,
    then the blocks' partials one after another in `order`, or pairwise (np.sum)."""
    n, width = x.size, blocks * threads
    rows = -(-n // width)
    grid = np.zeros(rows * width, dtype)
    grid[:n] = x
    grid = grid.reshape(rows, width)
    if compensated:
        s, c = np.zeros(width, dtype), np.zeros(width, dtype)
        for row in grid:
            y = row - c
            t = s + y
            c = (t - s) - y
            s = t
        sums = s - c
    else:
        sums = np.cumsum(grid, axis=0, dtype=dtype)[-1]
    tree = sums.reshape(blocks, threads)
    while tree.shape[1] > 1:
        half = tree.shape[1] // 2
        tree = tree[:, :half] + tree[:, half:]
    p = tree[:, 0]
    if order == "pairwise":
        return np.sum(p, dtype=dtype)
    p = {"data": p, "reversed": p[::-1], "largest first": p[np.argsort(-np.abs(p))],
         "smallest first": p[np.argsort(np.abs(p))],
         "random": np.random.default_rng(0).permutation(p)}[order]
    return np.cumsum(p, dtype=dtype)[-1]


def running_sum(terms, axis):
    """float32 terms added one after another along `axis`, as one thread adds them."""
    terms = np.moveaxis(terms, axis, 0)
    total = np.zeros(terms.shape[1:], np.float32)
    for term in terms:
        total += term
    return total


def block_partials(terms, blocks, threads):
    """Each block's exact share of the sum: the terms its grid-stride slices hold."""
    width = blocks * threads
    grid = np.zeros(-(-terms.size // width) * width)
    grid[:terms.size] = terms
    return grid.reshape(-1, blocks, threads).sum(axis=(0, 2))


def dot_data(rng, kind, n):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    if kind == "positive":
        return np.abs(a), np.abs(b)
    if kind == "equal products":  # one term added again and again: rounding is systematic
        return np.full(n, 1.1, np.float32), np.full(n, 0.3, np.float32)
    if kind == "magnitudes 1e-3 to 1e3":
        return a * np.float32(10.0) ** rng.uniform(-3, 3, n).astype(np.float32), b
    return a, b


def fails(got, expected, **tolerance):
    with pytest.raises(MismatchError):
        check(got, expected, **tolerance)


def failed(report, case):
    """Whether the checker's report failed the case whose description has `case`."""
    matching = [c for c in report.cases if case in c.description]
    assert matching, f"no case {case!r} in {report}"
    return not any(c.passed for c in matching)


# --------------------------------------------------------------- the dot product

@pytest.mark.parametrize("kind", ["mixed signs", "positive", "equal products",
                                  "magnitudes 1e-3 to 1e3"])
def test_dot_tolerance_admits_every_order_the_kernels_can_take(kind, rng):
    a, b = dot_data(rng, kind, 100_003)
    reference = m.dot_reference(a, b)
    for blocks, threads in ((4, 256), (3, 64), (1, 1024), (391, 256)):
        tolerance = m.dot_tolerance(a, b, blocks=blocks, threads=threads)
        for order in PARTIAL_ORDERS:
            got = kernel_sum(a * b, blocks, threads, np.float32, order)
            check(got, reference, name=f"{blocks}x{threads}, partials {order}", rtol=0,
                  atol=tolerance)


@pytest.mark.parametrize("blocks, threads, margin", [(H100_BLOCKS, 256, 50),
                                                     (2 * H100_BLOCKS, 256, 10),
                                                     (32, 1024, 5000)])
def test_dot_tolerance_fails_every_lost_block_of_positive_products(blocks, threads, margin,
                                                                   rng):
    # The launches of the chapter and of the benchmark on the H100, at a tenth of its size
    a, b = dot_data(rng, "positive", 1_000_003)
    products = a.astype(np.float64) * b
    tolerance = m.dot_tolerance(a, b, blocks=blocks, threads=threads)
    partials = block_partials(products, blocks, threads)
    assert partials.min() > margin * tolerance
    fails(products.sum() - partials.min(), m.dot_reference(a, b), rtol=0, atol=tolerance)


@pytest.mark.parametrize("blocks, threads", [(1, 32), (3, 64), (4, 256)])
def test_dot_tolerance_fails_a_lost_product_at_test_sizes(blocks, threads, rng):
    a, b = dot_data(rng, "mixed signs", 1001)
    products = a.astype(np.float64) * b
    typical = np.argsort(np.abs(products))[products.size // 2]  # the median magnitude
    fails(products.sum() - products[typical], m.dot_reference(a, b), rtol=0,
          atol=m.dot_tolerance(a, b, blocks=blocks, threads=threads))


def test_dot_partial_with_a_lost_block_fails_on_the_kernels(rng):
    a, b = dot_data(rng, "positive", 1001)
    partials = m.dot_partial(a, b, blocks=3, threads=64).partials.copy_to_host()
    tolerance = m.dot_tolerance(a, b, blocks=3, threads=64)
    check(partials.sum(dtype=np.float32), m.dot_reference(a, b), rtol=0, atol=tolerance)
    for lost in range(3):
        fails(np.delete(partials, lost).sum(dtype=np.float32), m.dot_reference(a, b), rtol=0,
              atol=tolerance)


def test_dot_tolerance_refuses_what_it_cannot_bound(rng):
    a, b = dot_data(rng, "mixed signs", 100)
    with pytest.raises(ValueError, match="power of two"):
        m.dot_tolerance(a, b, threads=48)
    with pytest.raises(ValueError, match="no useful error bound"):
        m.summation_rounding(np.ones(10), 1 << 23, 1)


# ---------------------------------------------------------------------- matmul

def dropped_term(a, b, rtol, atol):
    """a @ b in float64 with one product of median size left out of c[0, 0], and how
    many times the tolerance at c[0, 0] that product is."""
    c = mm.matmul_float64(a, b)
    terms = a[0].astype(np.float64) * b[:, 0]
    term = terms[np.argsort(np.abs(terms))[terms.size // 2]]
    margin = abs(term) / (atol + rtol * abs(c[0, 0]))
    c[0, 0] -= term
    return c, margin


@pytest.mark.parametrize("k", [1000, 4096])
@pytest.mark.parametrize("kind", ["normal", "uniform 0-1"])
def test_matmul_tolerance_admits_other_orders_and_fails_a_dropped_term(k, kind, rng):
    if kind == "normal":
        a, b = (rng.standard_normal(s).astype(np.float32) for s in ((16, k), (k, 16)))
    else:
        a, b = (rng.random(s, dtype=np.float32) for s in ((16, k), (k, 16)))
    rtol, atol = mm.tolerance(a, b)
    exact = mm.matmul_float64(a, b)
    terms = a[:, :, None] * b[None, :, :]  # float32 products, summed over axis 1 (k)
    for name, order in (("in order", terms), ("reversed", terms[:, ::-1])):
        check(running_sum(order, axis=1), exact, name=name, rtol=rtol, atol=atol)
    blocked = running_sum(terms.reshape(16, -1, 8, 16).sum(axis=2, dtype=np.float32),
                          axis=1)  # running sums one block of 8 long
    check(blocked, exact, name="blocked", rtol=rtol, atol=atol)
    c, margin = dropped_term(a, b, rtol, atol)
    assert margin > 5
    fails(c, exact, rtol=rtol, atol=atol)


@pytest.mark.parametrize("rows, cols", [(1000, 3000), (20_000, 1001)])
def test_matvec_checker_tolerance_admits_other_orders_and_fails_a_dropped_term(rows, cols,
                                                                               rng):
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    exact = a.astype(np.float64) @ x
    tolerance = {"rtol": cmm.MATVEC_RTOL, "atol": cmm.MATVEC_ATOL}
    terms = a * x
    for name, order in (("in order", terms), ("reversed", terms[:, ::-1])):
        check(running_sum(order, axis=1), exact, name=name, **tolerance)
    y, margin = dropped_term(a, x[:, None], **tolerance)
    assert margin > 20
    fails(y[:, 0], exact, **tolerance)


# --------------------------------------------------------- the mutex exercises

def test_sum_positive_bound_admits_every_order_and_fails_a_lost_block(rng):
    x = rng.standard_normal(1_000_003).astype(np.float32)  # the checker's GPU case
    positive = np.where(x > 0, x, 0)
    expected = positive.astype(np.float64).sum()
    rtol = cm.sum_positive_rounding(x, blocks=H100_BLOCKS) / expected
    for blocks, threads in ((H100_BLOCKS, 256), (1, 1024), (3907, 256)):
        for order in PARTIAL_ORDERS:
            check(kernel_sum(positive, blocks, threads, np.float32, order), expected,
                  name=f"{blocks}x{threads}, partials {order}", rtol=rtol, atol=0)
    partials = block_partials(positive.astype(np.float64), H100_BLOCKS, 256)
    assert partials.min() > 50 * rtol * expected
    fails(expected - partials.min(), expected, rtol=rtol, atol=0)


def test_sum_positive_checker_fails_a_lost_block():
    def lost_block(x):
        # The solution's kernel, with the values of block 0's grid-stride slices zeroed
        blocks = m.default_blocks(x.size, m.THREADS)
        kept = np.arange(x.size) % (blocks * m.THREADS) >= m.THREADS
        return sm.sum_positive(np.where(kept, x, 0).astype(np.float32))

    assert failed(checks.lock_sum_positive(lost_block), "n=1001, mixed signs")


def test_sum_positive_checker_tolerance_fails_a_lost_value_at_small_sizes(rng):
    x = rng.standard_normal(1001).astype(np.float32)
    values = np.sort(x[x > 0])
    expected = values.astype(np.float64).sum()
    rtol = cm.sum_positive_rounding(x) / expected
    fails(expected - values[values.size // 10], expected, rtol=rtol, atol=0)


def test_bin_product_rtol_admits_random_orders_and_fails_a_lost_factor(rng):
    values = rng.uniform(0.9, 1.1, 20_001).astype(np.float32)  # the checker's one-bin case
    expected = np.prod(values.astype(np.float64))
    rtol = cm.bin_product_rtol(values.size)
    for seed in range(10):
        order = np.random.default_rng(seed).permutation(values)
        check(np.cumprod(order, dtype=np.float32)[-1], expected, rtol=rtol, atol=0)
    check(np.cumprod(values[::-1], dtype=np.float32)[-1], expected, rtol=rtol, atol=0)
    lost = np.flatnonzero(np.abs(values - 1) > 0.01)[0]  # 90% of the factors are
    fails(expected / values[lost], expected, rtol=rtol, atol=0)


def test_bin_product_checker_fails_one_wrong_bin():
    def one_factor_lost(keys, values, nbins):
        first = np.flatnonzero(np.abs(values - 1) > 0.01)[:1]  # one factor of one bin
        return sm.bin_product(keys, np.where(np.arange(values.size) == first, 1, values)
                              .astype(np.float32), nbins)

    report = checks.lock_bin_product(one_factor_lost)
    assert failed(report, "n=17, 7 bins") and "1 of 7 values differ" in str(report)


# ----------------------------------------------------- the reduction exercises

MEAN_VARIANCE = {"rtol": cr.MEAN_VARIANCE_RTOL, "atol": cr.MEAN_VARIANCE_ATOL}


def mean_variance_from(x, blocks, dtype, order="data"):
    v = x.astype(dtype)
    s = kernel_sum(v, blocks, sr.THREADS, dtype, order)
    s2 = kernel_sum(v * v, blocks, sr.THREADS, dtype, order)
    mean = np.float64(s) / x.size
    return np.array([mean, np.float64(s2) / x.size - mean * mean])


@pytest.mark.parametrize("n, blocks, mean, std", [(1_000_003, 264, 100, 1),
                                                  (10_001, 3, 3, 2), (257, 2, 100, 1)])
def test_mean_variance_tolerance_both_ways(n, blocks, mean, std, rng):
    x = rng.normal(mean, std, n).astype(np.float32)  # cases of the checker
    expected = np.array([x.mean(dtype=np.float64), x.var(dtype=np.float64)])
    for order in PARTIAL_ORDERS:
        check(mean_variance_from(x, blocks, np.float64, order), expected, name=order,
              **MEAN_VARIANCE)
    lost = x.copy()
    lost[n // 2] = 0  # one value never added, n unchanged
    fails(mean_variance_from(lost, blocks, np.float64), expected, **MEAN_VARIANCE)
    fails(np.array([expected[0], x.var(dtype=np.float64, ddof=1)]), expected, **MEAN_VARIANCE)
    if mean == 100:  # float32 accumulators show where the mean is large against the spread
        fails(mean_variance_from(x, blocks, np.float32), expected, **MEAN_VARIANCE)


def test_mean_variance_checker_fails_a_lost_value():
    def lost_value(x, blocks):
        return sr.mean_variance(np.where(np.arange(x.size) == x.size // 2, 0, x)
                                .astype(np.float32), blocks)

    assert failed(checks.mean_variance(lost_value), "n=10,001")


@pytest.mark.parametrize("blocks", [1, 2])
def test_kahan_chain_tolerance_fails_a_plain_sum_only(blocks):
    _, (x, _), expected = cr._chain_case(blocks)
    for order in PARTIAL_ORDERS:
        check(kernel_sum(x, blocks, sr.THREADS, np.float64, order, compensated=True),
              expected, rtol=cr.KAHAN_CHAIN_RTOL, atol=0)
        fails(kernel_sum(x, blocks, sr.THREADS, np.float64, order), expected,
              rtol=cr.KAHAN_CHAIN_RTOL, atol=0)


@pytest.mark.parametrize("n, blocks", [(10_001, 3), (1_000_003, 264)])
def test_kahan_tolerance_admits_every_order_and_fails_a_large_lost_value(n, blocks, rng):
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)  # the checker's data
    expected = math.fsum(x)
    atol = cr.KAHAN_OF_MAGNITUDES * math.fsum(np.abs(x))
    for threads in (32, 128, sr.THREADS, 1024):
        for order in PARTIAL_ORDERS:
            for compensated in (True, False):
                check(kernel_sum(x, blocks, threads, np.float64, order, compensated),
                      expected, rtol=0, atol=atol)
    largest = np.abs(x).max()
    assert largest > 1e3 * atol
    fails(expected - x[np.abs(x) == largest][0], expected, rtol=0, atol=atol)


def test_kahan_tolerance_admits_the_trees_rounding_where_values_cancel():
    # the halving tree adds thread 2's 2364.7 to thread 0's 3e8 before thread 1's -3e8:
    # every compensated answer is then about 1e-16 of 3e8 off, far more than 1e-12 of
    # the sum (a corpus answer scored 0 on such a draw).
    x = np.array([math.pi * 1e8, -math.pi * 1e8, 2364.6676793929714])
    expected = math.fsum(x)
    got = kernel_sum(x, 1, sr.THREADS, np.float64, compensated=True)
    fails(got, expected, rtol=1e-12, atol=0)
    check(got, expected, rtol=0, atol=cr.KAHAN_OF_MAGNITUDES * math.fsum(np.abs(x)))


# ------------------------------------- the default float32 tolerance (elementwise)

def test_default_float32_tolerance_admits_a_fused_multiply_add(rng):
    # saxpy on a GPU rounds a*x + y once (an FMA), NumPy twice: both must pass
    x, y = (rng.standard_normal(1_000_003).astype(np.float32) for _ in range(2))
    a = np.float32(-3.7)
    rtol, atol = default_tolerance(np.float32)
    fused = (np.float64(a) * x + y).astype(np.float32)
    check(fused, a * x + y, rtol=rtol, atol=atol)
    wrong = fused.copy()
    wrong[500_000] = x[500_000] + y[500_000]  # one element without the a
    fails(wrong, a * x + y, rtol=rtol, atol=atol)


# ------------------------------------------------------------ exact comparisons

def test_histogram_checker_fails_one_count_off_in_one_bin():
    def one_count_off(data):
        counts = sh.histogram_256(data).copy()
        counts[data[0]] += 1
        return counts

    report = checks.histogram_256(one_count_off)
    assert failed(report, "4,099 bytes of text") and "1 of 256 values differ" in str(report)


# ------------------------------------------------------------------------ GPU

GPU_N = 10_000_001


def measured_dot(version, da, db, launch):
    return float(version(da, db, **launch).value())


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["mixed signs", "positive"])
def test_dot_rounding_and_lost_blocks_at_full_size_on_gpu(kind):
    """Prints, per version and launch: the error, the tolerance, and what a lost block
    does (run with -s for the table)."""
    from kernels.gridstride import sm_count

    rng = np.random.default_rng(0)
    a, b = dot_data(rng, kind, GPU_N)
    da, db = cuda.to_device(a), cuda.to_device(b)
    reference = m.dot_reference(a, b)
    products = a.astype(np.float64) * b
    default = (m.default_blocks(GPU_N, m.THREADS), m.THREADS)
    print(f"\n{kind}, n = {GPU_N:,}, a . b = {reference:.7g}, median |a_i b_i| = "
          f"{np.median(np.abs(products)):.3g}")
    for blocks, threads in sorted({default, (8 * sm_count(), 256), (32, 1024)}):
        launch = {"blocks": blocks, "threads": threads}
        tolerance = m.dot_tolerance(a, b, **launch)
        errors = {}
        for name, version in m.VERSIONS.items():
            errors[name] = max(abs(measured_dot(version, da, db, launch) - reference)
                               for _ in range(5))
        partials = block_partials(products, blocks, threads)
        caught = np.abs(partials) > tolerance
        print(f"  {blocks} x {threads}: tolerance {tolerance:.4g}; largest error " +
              ", ".join(f"{k} {v:.3g}" for k, v in errors.items()) +
              f"; |block partial| min {np.abs(partials).min():.4g}, median "
              f"{np.median(np.abs(partials)):.4g}; a lost block fails for "
              f"{100 * caught.mean():.1f}% of blocks")
        assert max(errors.values()) <= tolerance
        # a real lost block: the GPU's own partials, less the one nearest zero
        got = m.dot_partial(da, db, **launch).partials.copy_to_host()
        lost = np.delete(got, np.argmin(np.abs(got))).sum(dtype=np.float32)
        if kind == "positive":
            assert np.abs(partials).min() > 20 * tolerance
            fails(lost, reference, rtol=0, atol=tolerance)
        with pytest.raises(MismatchError):
            check(m.dot_mutex_tid_plus_one(da, db, **launch).value(), reference, rtol=0,
                  atol=tolerance)
    try:
        import cupy
    except ImportError:
        return
    tolerance = m.dot_tolerance(a, b)  # the benchmark checks cupy.dot against it
    error = abs(float(cupy.dot(cupy.asarray(a), cupy.asarray(b))) - reference)
    print(f"  cupy.dot: error {error:.3g} against the default launch's tolerance "
          f"{tolerance:.4g}")
    assert error <= tolerance


@pytest.mark.gpu
def test_chapter_dot_numbers_on_gpu():
    """The numbers of the mutex chapter's paragraph on the tolerance (run with -s)."""
    rng = np.random.default_rng(0)  # as the chapter draws them
    n = 10_000_000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db = cuda.to_device(a), cuda.to_device(b)
    reference = m.dot_reference(a, b)
    tolerance = m.dot_tolerance(a, b)
    errors = {name: abs(float(v(da, db).value()) - reference) for name, v in m.VERSIONS.items()}
    wrong = abs(float(m.dot_mutex_tid_plus_one(da, db).value()) - reference)
    print(f"\nchapter: a . b = {reference:.6g}, tolerance {tolerance:.4g}, errors " +
          ", ".join(f"{k} {v:.2g}" for k, v in errors.items()) +
          f", tid + 1 bug off by {wrong:.4g}")
    assert max(errors.values()) <= tolerance and wrong > 100 * tolerance  # as the text says


@pytest.mark.gpu
def test_exercise_checkers_fail_planted_errors_at_full_size_on_gpu():
    def lost_block(x):
        blocks = m.default_blocks(x.size, m.THREADS)
        kept = np.arange(x.size) % (blocks * m.THREADS) >= m.THREADS
        return sm.sum_positive(np.where(kept, x, 0).astype(np.float32))

    assert failed(checks.lock_sum_positive(lost_block), "n=1000003, mixed signs")

    def lost_value(x, blocks):
        return sr.mean_variance(np.where(np.arange(x.size) == x.size // 2, 0, x)
                                .astype(np.float32), blocks)

    assert failed(checks.mean_variance(lost_value), "n=4,000,037")


def test_chapter_states_the_bounds_numbers():
    """The mutex chapter's numbers on the tolerance, computed from its own data."""
    text = " ".join((pathlib.Path(__file__).parent.parent / "book" / "mutex.md").read_text()
                    .split())
    rng = np.random.default_rng(0)  # as the chapter draws them, at its GPU size
    n = 10_000_000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    launch = {"blocks": H100_BLOCKS, "threads": 256}
    products = a.astype(np.float64) * b
    partials = np.abs(block_partials(products, **launch))
    tolerance = m.dot_tolerance(a, b, **launch)
    stated = [f"{H100_BLOCKS} blocks of 256", f"bound is {tolerance:.1f}",
              f"{products.sum():,.0f}".replace("-", "−"),
              f"about {round(n / H100_BLOCKS, -3):,.0f} products",
              f"±{np.median(partials):.0f} (the median)",
              f"for {100 * (partials > tolerance).mean():.0f}% of the",
              f"typical one is {np.median(np.abs(products)):.2f}"]
    a, b = np.abs(a), np.abs(b)
    partials = block_partials(np.abs(products), **launch)
    tolerance = m.dot_tolerance(a, b, **launch)
    stated += [f"a dot product of {np.abs(products).sum() / 1e6:.1f} million",
               f"bound is {tolerance:.0f},", f"at least {partials.min():,.0f}:",
               f"{partials.min() / tolerance:.0f} times the bound"]
    missing = [s for s in stated if s not in text]
    assert not missing, f"book/mutex.md does not say: {missing}"
