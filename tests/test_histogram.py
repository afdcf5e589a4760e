import re

import numpy as np
import pytest
from numba import cuda

from kernels import checks, validate
from kernels import histogram as h
from kernels.harness import check
from answers import solution
from ptx import assert_compiles

solutions = solution("histogram")  # as a student hands it in: its launches count

BYTES_IN = "void(uint8[::1], int64[::1])"
WORDS_IN = "void(uint32[::1], uint8[::1], int64[::1])"
PTX_SIGNATURES = {
    "clear_kernel": ["void(int64[::1])"],
    "histogram_global_atomics_kernel": [BYTES_IN],
    "histogram_shared_atomics_kernel": [BYTES_IN],
    "histogram_shared_atomics_int64_kernel": [BYTES_IN],
    "histogram_shared_wide_loads_kernel": [WORDS_IN],
    "histogram_lane_private_kernel": [WORDS_IN],
    "count_word": ["void(int32[:, ::1], uint64, int64)"],
    "histogram_last_block_kernel": ["void(uint64[::1], uint8[::1], int32[::1], int32[::1], "
                                    "int64[::1])"],
    "count_word_spare": ["void(int32[:, ::1], uint64, int64)"],
    "histogram_bin_tickets_kernel": ["void(uint64[::1], uint8[::1], uint64[::1], int64[::1])"],
    "count_word_lean": ["void(int32[::1], uint64, uint32)"],
    "histogram_lean_count_kernel": ["void(uint64[::1], uint8[::1], uint64[::1], int64[::1])"],
}
ALL = dict(h.VERSIONS, histogram_shared_atomics_int64=h.histogram_shared_atomics_int64)


def test_reference_agrees_with_numpy_histogram_and_the_cpu_loop(rng):
    data = rng.integers(0, 256, 10_007, dtype=np.uint8)
    expected = np.histogram(data, bins=h.BINS, range=(-0.5, h.BINS - 0.5))[0]
    check(h.histogram_reference(data), expected)
    check(h.histogram_cpu_loop(data), expected)


def test_histogram_range_0_128_counts_byte_128_in_the_last_bin():
    """The pitfall the chapter shows: numpy's last bin is closed on the right."""
    data = np.array([127, 128], np.uint8)
    assert np.histogram(data, bins=128, range=(0, 128))[0][127] == 2
    assert h.histogram_reference(data)[127] == 1


@pytest.mark.parametrize("version", sorted(ALL))
@pytest.mark.parametrize("n,blocks,threads", [(1, 1, 32), (7, 1, 1), (6, 2, 32),
                                              (1_001, 3, 64), (4_099, None, 96)])
def test_matches_bincount_on_random_bytes(version, n, blocks, threads, rng):
    data = rng.integers(0, 256, n, dtype=np.uint8)  # all 256 values: >= 128 are skipped
    out = np.full(h.BINS, -7, np.int64)  # poisoned: the launcher must clear it
    check(ALL[version](data, out, blocks=blocks, threads=threads),
          np.bincount(data, minlength=256)[:h.BINS], name=version)


@pytest.mark.parametrize("version", sorted(h.VERSIONS))
def test_device_in_device_out_and_one_hot_bin(version):
    data = np.full(2_003, ord("e"), np.uint8)
    out = h.VERSIONS[version](cuda.to_device(data), blocks=2, threads=64)
    assert hasattr(out, "copy_to_host")
    check(out, h.histogram_reference(data))


@pytest.mark.parametrize("version", ["histogram_last_block", "histogram_bin_tickets",
                                     "histogram_lean_count"])
def test_one_launch_versions_leave_their_totals_at_zero_after_every_launch(version, rng):
    # a big count first, then launches of other shapes: a total or ticket left behind
    # would show in the next call's counts
    for n, blocks, threads in ((4_099, 3, 64), (17, 5, 33), (1, 1, 1), (2_053, 2, 96)):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        out = np.full(h.BINS, -7, np.int64)
        check(h.VERSIONS[version](data, out, blocks=blocks, threads=threads),
              h.histogram_reference(data), name=f"{version} n={n}")


def test_wide_loads_refuse_a_misaligned_device_slice():
    if not hasattr(cuda.device_array(4, np.uint8), "__cuda_array_interface__"):
        pytest.skip("simulated device arrays have no address to check")
    d = cuda.to_device(np.arange(64, dtype=np.uint8))
    with pytest.raises(ValueError, match="divisible by 4"):
        h.histogram_lane_private(d[1:])


def test_host_bytes_go_to_the_device_once_for_both_views():
    # A kernel given the words and the bytes of one host array would copy it twice
    # (and back twice); _words hands both over already on the device, as one copy.
    data = np.arange(103, dtype=np.uint8)
    words, d = h._words(data, np.uint32)
    assert validate.on_device(words) and validate.on_device(d)
    np.testing.assert_array_equal(words.copy_to_host().view(np.uint8), data[:100])
    np.testing.assert_array_equal(d.copy_to_host(), data)


BAD_CALLS = {
    "not uint8": (lambda d: h.histogram_shared_atomics(d.astype(np.int32)), TypeError,
                  "accepted: uint8"),
    "2-D": (lambda d: h.histogram_lane_private(d.reshape(10, 10)), ValueError, "1-D"),
    "empty": (lambda d: h.histogram_global_atomics(d[:0]), ValueError, "empty"),
    "strided": (lambda d: h.histogram_shared_wide_loads(d[::2]), ValueError, "C-contiguous"),
    "bad out dtype": (lambda d: h.histogram_lane_private(d, np.zeros(h.BINS, np.int32)),
                      TypeError, "out has dtype int32"),
    "bad out size": (lambda d: h.histogram_shared_atomics(d, np.zeros(256, np.int64)),
                     ValueError, "out has shape (256,), expected (128,)"),
    "device out, host data": (lambda d: h.histogram_global_atomics(
        d, cuda.device_array(h.BINS, np.int64)), ValueError, "on the host or all on the device"),
    "too many threads": (lambda d: h.histogram_lane_private(d, threads=2048), ValueError,
                         "at most 1024"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    with pytest.raises(error, match=re.escape(words)):
        call(rng.integers(0, 256, 100, dtype=np.uint8))


def test_compiles_to_ptx():
    assert_compiles("histogram")


# ------------------------------------------------------------------ exercises

PLANTED_BUGS = {
    # only the 128 ASCII bins counted: the last bins stay empty
    "histogram_256": lambda data: np.bincount(data[data < 128], minlength=256),
    # letters only lower case: "Hamlet" becomes a 5-letter word
    "word_length_histogram": lambda data: checks.histogram.word_lengths_reference(
        np.where((data >= 65) & (data <= 90), 32, data).astype(np.uint8)),
    # the last byte is never looked at
    "positions_of": lambda data, value: np.flatnonzero(data[:-1] == value),
}


@pytest.mark.parametrize("exercise", sorted(PLANTED_BUGS))
def test_planted_bug_fails_its_checker(exercise):
    # that each solution passes its checker: tests/test_grading.py (every exercise)
    report = getattr(checks, exercise)(PLANTED_BUGS[exercise])
    assert not report.passed and "FAIL" in str(report)


def test_checker_reports_a_crash_in_plain_words():
    def crashes(data):
        raise IndexError("index 128 is out of bounds")
    report = checks.histogram_256(crashes)
    assert not report.passed and "your code raised IndexError" in str(report)


# ------------------------------------------------------------------ on a GPU


@pytest.mark.gpu
def test_full_size_text_on_gpu():
    from kernels import size, text
    data = text.shakespeare().data[:size("histogram_text")]
    expected = h.histogram_reference(data)
    d = cuda.to_device(data)
    for name, fn in ALL.items():
        for _ in range(3):  # races would show as differing counts
            check(fn(d), expected, name=name)


@pytest.mark.gpu
def test_large_random_and_odd_sizes_on_gpu(rng):
    for n in (1, 3, 5, 1 << 20, 10_000_019):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        d = cuda.to_device(data)
        for name, fn in ALL.items():
            check(fn(d), h.histogram_reference(data), name=f"{name}, {n} bytes")


def test_every_byte_that_is_no_letter_stands_between_two_words():
    from kernels.checks import histogram as checking

    text = checking.every_separator(np.random.default_rng(5))
    letter = np.isin(text, checking.LETTERS)
    alone = text[1:-1][letter[:-2] & ~letter[1:-1] & letter[2:]]
    assert sorted(alone) == sorted(set(range(256)) - {*range(65, 91), *range(97, 123)})


@cuda.jit(device=True)
def _letter_from_A_to_z(c):
    return c >= 65 and c <= 122  # WRONG on purpose: takes [ \ ] ^ _ ` in


@cuda.jit
def _words_from_A_to_z_kernel(data, counts):
    n = data.size
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        if _letter_from_A_to_z(data[i]) and (i == 0 or not _letter_from_A_to_z(data[i - 1])):
            j = i + 1
            while j < n and _letter_from_A_to_z(data[j]):
                j += 1
            cuda.atomic.add(counts, min(j - i, 31), 1)


def test_word_lengths_catch_a_letter_range_from_A_to_z():
    def word_length_histogram(data):
        counts = cuda.to_device(np.zeros(32, np.int64))
        _words_from_A_to_z_kernel[4, 128](cuda.to_device(data), counts)
        return counts.copy_to_host()

    report = checks.word_length_histogram(word_length_histogram)
    assert not report.passed
    assert "FAIL  each of the 204 bytes that are not letters" in str(report)
