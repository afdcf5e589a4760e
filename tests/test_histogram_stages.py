import numpy as np
import pytest
from numba import cuda

from kernels import histogram as h
from kernels import histogram_stages as hs
from kernels.harness import check
from ptx import assert_compiles

PTX_SIGNATURES = {
    "histogram_stages_kernel": ["void(uint64[::1], uint8[::1], uint64[::1], int64[::1], "
                                "int64)"],
    "count_word_spare": ["void(int32[:, ::1], uint64, int64)"],
}


@pytest.mark.parametrize("n,blocks,threads", [(1, 1, 32), (1_001, 3, 64), (4_099, 2, 96)])
def test_the_whole_kernel_counts_and_the_cut_stages_leave_the_totals_at_zero(
        n, blocks, threads, rng):
    data = rng.integers(0, 256, n, dtype=np.uint8)
    d_data = cuda.to_device(data)
    out = cuda.to_device(np.full(h.BINS, -7, np.int64))  # poisoned
    for stage in hs.STAGES:  # the cut stages first: they must add nothing to the totals
        hs.histogram_stages(d_data, stage, out, blocks=blocks, threads=threads)
    check(out, h.histogram_reference(data), name="merge")
    check(hs.histogram_stages(data, "merge", blocks=blocks, threads=threads),
          h.histogram_reference(data), name="merge, again")


def test_an_unknown_stage_is_refused_clearly():
    with pytest.raises(ValueError, match="stage must be one of read, clear, count, merge"):
        hs.histogram_stages(np.zeros(8, np.uint8), "tail")


def test_compiles_to_ptx():
    assert_compiles("histogram_stages")
