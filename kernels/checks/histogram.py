"""Checkers for the exercises of the atomics and histogram chapter."""

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, races
from kernels.checks.core import calling, run_cases
from kernels.harness import to_host

__all__ = ["histogram_256", "word_length_histogram", "positions_of"]

WORD_BINS = 32  # word lengths 1..30 exactly; bin 31 counts every word of 31+ letters
SIZES = (1, 1_001, 4_099) if SIMULATOR else (1, 7, 1_001, 4_099, 5_000_011)
# The race case's grid: the course's launch on the simulator (4 blocks of 128 threads
# per SM, one SM) and any fixed grid of up to 1,024 threads, two rounds each
RACE_THREADS = 1024


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


LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8)
# Every byte that is not a letter: ASCII punctuation (the six between Z and a, and
# @ and { just outside the letters, included), digits, every kind of whitespace, control
# bytes, and the bytes >= 128 of UTF-8 text
NOT_LETTERS = np.setdiff1d(np.arange(256, dtype=np.uint8), LETTERS)


def random_words(rng, n):
    """n bytes of word-like text: letters in runs of 1 to 40, separated by 1 to 3 bytes
    that are not letters, printable ASCII punctuation, digits and whitespace as often as
    all the other bytes (UTF-8's >= 128, control bytes) together."""
    printable = NOT_LETTERS[(NOT_LETTERS >= 9) & (NOT_LETTERS < 127)
                            & ((NOT_LETTERS <= 13) | (NOT_LETTERS >= 32))]
    out = np.empty(n, np.uint8)
    i = 0
    while i < n:
        word = rng.choice(LETTERS, rng.integers(1, 41))
        gap = rng.choice(printable if rng.random() < 0.5 else NOT_LETTERS,
                         rng.integers(1, 4))
        piece = np.concatenate([word, gap])[: n - i]
        out[i:i + piece.size] = piece
        i += piece.size
    return out


def every_separator(rng):
    """Text where each byte that is not a letter stands alone between two words, in a
    drawn order: an answer that takes one of them for a letter (65 <= c <= 122 takes
    [ \\ ] ^ _ ` in) joins two words, and its counts are wrong. The words are 1 to 9
    letters long, each starting or ending (drawn) with a letter at an edge of the
    ranges: A, Z, a or z."""
    edges = np.frombuffer(b"AZaz", np.uint8)
    pieces = []
    for byte in rng.permutation(NOT_LETTERS):
        word = rng.choice(LETTERS, rng.integers(1, 10))
        word[rng.integers(0, 2) * (word.size - 1)] = rng.choice(edges)
        pieces += [word, np.array([byte], np.uint8)]
    return np.concatenate(pieces + [rng.choice(LETTERS, rng.integers(1, 10))])


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
    if not SIMULATOR:  # one thread of a fixed grid counts hundreds of one byte
        cases.append(("5,000,011 bytes all equal to 97", np.full(5_000_011, 97, np.uint8)))
    # 4 values: many threads hit each bin
    few = rng.integers(0, 4, races.two_rounds(rng, RACE_THREADS), dtype=np.uint8)
    return run_cases("histogram_256",
                     [(d, data, byte_counts_reference(data)) for d, data in cases],
                     _counts(fn),
                     race=races.host(fn, (few,), f"{_bytes(few.size)} of 4 values",
                                     needs=("shared_counters", "wide_counts")))


def word_length_histogram(fn):
    """Check `fn(data) -> counts`: counts[k] = number of words of k letters for
    k = 1..30 and counts[31] = words of 31 letters or more (counts[0] = 0). A word is
    a maximal run of ASCII letters; `data` is uint8 text on the host."""
    rng = core.rng(52)
    cases = [(f"{_bytes(n)} of random words", random_words(rng, n))
             for n in SIZES + (core.drawn_size(rng, 2, 5000),)]
    cases += [("a text that starts and ends inside a word", np.frombuffer(b"Hamlet to Ophelia",
                                                                           np.uint8)),
              ("each of the 204 bytes that are not letters (punctuation, digits, whitespace, "
               "control and UTF-8 bytes) once, between two words", every_separator(rng)),
              ("one 50-letter word", np.full(50, ord("e"), np.uint8)),
              ("no letters at all", np.full(1_001, ord(" "), np.uint8))]
    n = races.two_rounds(rng, RACE_THREADS)
    same = np.frombuffer((b"ab cd ef " * (n // 9 + 1))[:n], np.uint8)  # one length: one bin
    return run_cases("word_length_histogram",
                     [(d, data, word_lengths_reference(data)) for d, data in cases],
                     _counts(fn),
                     race=races.host(fn, (same,), f"{_bytes(same.size)} of two-letter words",
                                     needs=("wide_counts",)))


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
    data = rng.integers(0, 3, races.two_rounds(rng, RACE_THREADS), dtype=np.uint8)
    return run_cases("positions_of",
                     [(d, inp, np.flatnonzero(inp[0] == inp[1])) for d, inp in cases],
                     _positions(fn),
                     race=races.host(fn, (data, 1),
                                     f"{_bytes(data.size)}, a third of them matching"))
