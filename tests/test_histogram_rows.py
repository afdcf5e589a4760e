import re

import numpy as np
import pytest
from numba import cuda

from kernels import histogram as h
from kernels import histogram_rows as hr
from kernels.harness import check
from ptx import HERE, assert_compiles, without_simulator

PTX_SIGNATURES = {
    "count_word_row": ["void(int32[::1], uint64)"],
    "histogram_lean_count_one_row_kernel": ["void(uint64[::1], uint8[::1], uint64[::1], "
                                            "int64[::1])"],
}


@pytest.mark.parametrize("n,blocks,threads", [(1, 1, 32), (7, 1, 1), (6, 2, 32),
                                              (1_001, 3, 64), (4_099, None, 96)])
def test_matches_bincount_on_random_bytes(n, blocks, threads, rng):
    data = rng.integers(0, 256, n, dtype=np.uint8)  # all 256 values: >= 128 are skipped
    out = np.full(h.BINS, -7, np.int64)  # poisoned: every bin must be written
    check(hr.histogram_lean_count_one_row(data, out, blocks=blocks, threads=threads),
          np.bincount(data, minlength=256)[:h.BINS])


def test_totals_are_left_at_zero_after_every_launch(rng):
    # a big count first, then launches of other shapes: a total or ticket left behind
    # would show in the next call's counts
    for n, blocks, threads in ((4_099, 3, 64), (17, 5, 33), (1, 1, 1), (2_053, 2, 96)):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        out = cuda.to_device(np.full(h.BINS, -7, np.int64))
        check(hr.histogram_lean_count_one_row(cuda.to_device(data), out, blocks=blocks,
                                              threads=threads),
              h.histogram_reference(data), name=f"n={n}")


def test_every_lane_on_one_counter_and_device_in_device_out():
    data = np.full(2_003, ord("e"), np.uint8)  # the case lane-private rows are for
    out = hr.histogram_lean_count_one_row(cuda.to_device(data), blocks=2, threads=64)
    assert hasattr(out, "copy_to_host")
    check(out, h.histogram_reference(data))


def test_each_one_row_variant_pairs_a_version_and_takes_its_launch():
    for lane_private, one_row in hr.ONE_ROW.items():
        assert lane_private in h.VERSIONS
        data = np.arange(300, dtype=np.uint8)
        check(one_row(data), h.VERSIONS[lane_private](data), name=one_row.__name__)


@pytest.mark.parametrize("call,error,words", [
    (lambda d: hr.histogram_lean_count_one_row(d.astype(np.int16)), TypeError,
     "accepted: uint8"),
    (lambda d: hr.histogram_lean_count_one_row(d[:0]), ValueError, "empty"),
    (lambda d: hr.histogram_lean_count_one_row(d, np.zeros(h.BINS, np.int32)), TypeError,
     "out has dtype int32"),
    (lambda d: hr.histogram_lean_count_one_row(d, threads=2048), ValueError, "at most 1024"),
], ids=["not uint8", "empty", "bad out dtype", "too many threads"])
def test_bad_input_is_refused_clearly(call, error, words, rng):
    with pytest.raises(error, match=re.escape(words)):
        call(rng.integers(0, 256, 100, dtype=np.uint8))


def test_compiles_to_ptx():
    assert_compiles("histogram_rows")


def test_two_blocks_of_the_default_launch_never_share_an_h100_sm():
    """atomics.md, lane-private rows or one row per block: "Two blocks of 1,024 threads
    never run on one SM at once here, whichever the rows: compiled for the H100 (sm_90),
    both kernels need more than 32 registers per thread (a test compiles them and
    counts), and an SM's 65,536 registers hold 2,048 threads only at 32 each". Each
    kernel compiled for sm_90 and linked as numba-cuda links it (cuda.core's Linker);
    the linker's log gives its registers per thread."""
    from kernels import hardware
    threads = h.default_launch("histogram_lean_count")[1]
    code = (f"import re, sys; sys.path.insert(0, {str(HERE)!r}); import compile_ptx as p\n"
            "from cuda.core import Linker, LinkerOptions, ObjectCode\n"
            "from kernels import histogram as h, histogram_rows as hr\n"
            "sig = 'void(uint64[::1], uint8[::1], uint64[::1], int64[::1])'\n"
            "for k in (h.histogram_lean_count_kernel, hr.histogram_lean_count_one_row_kernel):\n"
            "    ptx = p.compile_ptxes(k, sig, False)[(9, 0)]\n"
            "    linker = Linker(ObjectCode.from_ptx(ptx.encode()),\n"
            "                    options=LinkerOptions(arch='sm_90', verbose=True))\n"
            "    linker.link('cubin')\n"
            "    used = re.findall(r'[Uu]sed (\\d+) registers', linker.get_info_log())\n"
            "    print(k.py_func.__name__, used[0])\n")
    out = dict(line.split() for line in without_simulator(code).splitlines())
    assert set(out) == {"histogram_lean_count_kernel", "histogram_lean_count_one_row_kernel"}
    fits = hardware.REGISTERS_PER_SM // (2 * threads)
    assert (threads, fits, hardware.max_threads_per_sm((9, 0))) == (1024, 32, 2048)
    for name, registers in out.items():
        assert int(registers) > fits, (name, registers)
    text = " ".join((HERE.parent / "book" / "atomics.md").read_text().split())
    assert ("both kernels need more than 32 registers per thread (a test compiles them "
            "and counts), and an SM's 65,536 registers hold 2,048 threads only at 32 "
            "each") in text
