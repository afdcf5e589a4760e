"""Checkers for the exercises of the atomics and histogram chapter."""

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, races
from kernels.checks.core import calling, run_cases
from kernels.harness import to_host

__all__ = ["histogram_256", "word_length_histogram", "positions_of"]

WORD_BINS = 32  # word lengths 1..30 exactly; bin 31 counts every word of 31+ letters
SIZES = (1, 1_001, 4_099) if SIMULATOR else (1, 7, 1_001, 4_099, 5_000_011)
RACE_SIZE = 300  # the race case: a few blocks of a grid-stride launch


def _bytes(n):
    return f"{n:,} byte" + ("" if n == 1 else "s")


def byte_counts_reference(data):
    return np.bincount(data, minlength=256).astype(np.int64)


def word_lengths_reference(data):
    """Counts of word lengths: a word is a maximal run of ASCII letters A-Z, a-z."""
    letter = ((data >= ord("a")) & (data <= ord("z"))) | ((data >= ord("A")) & (data <= ord("Z")))
    edges = np.diff(np.concatenate(([0], letter.astype(np.int8), [0])))
    lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    return np.bincount(np.minimum(lengths, WORD_BINS - 1), minlength=WORD_BINS).astype(np.int64)


def random_words(rng, n):
    """n bytes of word-like text: letters in runs of 1 to 40, separated by spaces,
    punctuation and UTF-8 bytes (>= 128, which are not letters)."""
    out = np.empty(n, np.uint8)
    i = 0
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8)
    gaps = np.frombuffer(" .,;'\n-\xc3\xa9".encode("latin-1"), np.uint8)
    while i < n:
        word = rng.choice(letters, rng.integers(1, 41))
        gap = rng.choice(gaps, rng.integers(1, 4))
        piece = np.concatenate([word, gap])[: n - i]
        out[i:i + piece.size] = piece
        i += piece.size
    return out


def _counts(fn):
    """run(data): the counts fn returned (a NumPy or device array), as int64."""
    answer = calling(fn)
    return lambda data: np.asarray(to_host(answer(data))).astype(np.int64)


def _positions(fn):
    answer = calling(fn)
    return lambda inputs: np.sort(np.asarray(to_host(answer(inputs))).astype(np.int64))


def histogram_256(fn):
    """Check `fn(data) -> counts`: counts[b] = how many bytes of `data` (uint8, 1-D,
    on the host) equal b, for all 256 byte values, as an array of 256 integers."""
    rng = core.rng(51)
    cases = [(f"{_bytes(n)} drawn from all 256 values", rng.integers(0, 256, n, dtype=np.uint8))
             for n in SIZES + (core.drawn_size(rng, 2, 5000),)]
    cases.append(("1,001 bytes all equal to 255 (the last bin)", np.full(1_001, 255, np.uint8)))
    cases.append(("4,099 bytes of text with UTF-8 letters", random_words(rng, 4_099)))
    few = rng.integers(0, 4, RACE_SIZE, dtype=np.uint8)  # many threads hit each bin
    return run_cases("histogram_256",
                     [(d, data, byte_counts_reference(data)) for d, data in cases],
                     _counts(fn),
                     race=races.host(fn, (few,), f"{_bytes(RACE_SIZE)} of 4 values",
                                     needs=("shared_counters",)))


def word_length_histogram(fn):
    """Check `fn(data) -> counts`: counts[k] = number of words of k letters for
    k = 1..30 and counts[31] = words of 31 letters or more (counts[0] = 0). A word is
    a maximal run of ASCII letters; `data` is uint8 text on the host."""
    rng = core.rng(52)
    cases = [(f"{_bytes(n)} of random words", random_words(rng, n))
             for n in SIZES + (core.drawn_size(rng, 2, 5000),)]
    cases += [("a text that starts and ends inside a word", np.frombuffer(b"Hamlet to Ophelia",
                                                                           np.uint8)),
              ("one 50-letter word", np.full(50, ord("e"), np.uint8)),
              ("no letters at all", np.full(1_001, ord(" "), np.uint8))]
    same = np.frombuffer(b"ab cd ef " * (RACE_SIZE // 9), np.uint8)  # one length: one bin
    return run_cases("word_length_histogram",
                     [(d, data, word_lengths_reference(data)) for d, data in cases],
                     _counts(fn),
                     race=races.host(fn, (same,), f"{_bytes(same.size)} of two-letter words"))


def positions_of(fn):
    """Check `fn(data, value) -> positions`: every index i with data[i] == value, each
    once, in any order (the checker sorts them). `data` is uint8 on the host."""
    rng = core.rng(53)
    cases = []
    for n in SIZES + (core.drawn_size(rng, 2, 5000),):
        data = random_words(rng, n)
        cases.append((f"spaces in {_bytes(n)} of random words", (data, ord(" "))))
    cases += [("a value that never occurs", (np.full(1_001, 7, np.uint8), 8)),
              ("every byte matches", (np.full(1_001, 7, np.uint8), 7))]
    n = core.drawn_size(rng, 2**15 + 1_000, 2**15 + 8_000)  # an index or count in 16 bits fails
    cases.append((f"spaces in {_bytes(n)} of random words, past index 32,767",
                  (random_words(rng, n), ord(" "))))
    data = rng.integers(0, 3, RACE_SIZE, dtype=np.uint8)
    return run_cases("positions_of",
                     [(d, inp, np.flatnonzero(inp[0] == inp[1])) for d, inp in cases],
                     _positions(fn),
                     race=races.host(fn, (data, 1),
                                     f"{_bytes(RACE_SIZE)}, a third of them matching"))
