import numpy as np

from kernels import histogram as h
from kernels import histogram_floors as hf
from kernels.harness import check
from ptx import assert_compiles

PTX_SIGNATURES = {
    "read_only_kernel": ["void(uint32[::1], uint8[::1], int64[::1])"],
    "read_only_wide_kernel": ["void(uint64[::1], uint8[::1], int64[::1])"],
}


def test_read_only_wide_reads_every_word(rng):
    data = rng.integers(0, 128, 1_001, dtype=np.uint8)  # never all bits set: out unchanged
    out = np.full(h.BINS, 9, np.int64)
    check(hf.read_only_wide(data, out, blocks=2, threads=32), np.full(h.BINS, 9))
    data[8:16] = 0xFF  # one uint64 word of all ones
    assert hf.read_only_wide(data, out, blocks=2, threads=32)[0] == 1


def test_read_only_reads_and_clears(rng):
    data = rng.integers(0, 128, 1_001, dtype=np.uint8)  # never all bits set: out stays 0
    check(hf.read_only(data, np.full(h.BINS, 9, np.int64), blocks=2, threads=32),
          np.zeros(h.BINS, np.int64))


def test_compiles_to_ptx():
    assert_compiles("histogram_floors")
