"""The matmul chapter's live numbers, rendered for three GPUs from their properties."""

import inspect
from fractions import Fraction

import pytest

from kernels import matmul as mm, matmul_bounds as mb, matmul_fast as mf

T4 = {"name": "Tesla T4", "compute_capability": [7, 5], "sm_count": 40,
      "clock_khz": 1_590_000}
A100 = {"name": "NVIDIA A100-SXM4-40GB", "compute_capability": [8, 0], "sm_count": 108,
        "clock_khz": 1_410_000}
H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0], "sm_count": 132,
        "clock_khz": 1_980_000}


@pytest.mark.parametrize("lanes, tiled, one_d", [(64, Fraction(1, 4), Fraction(4, 9)),
                                                 (128, Fraction(1, 8), Fraction(2, 9))])
def test_shared_memory_bounds_follow_the_lanes(lanes, tiled, one_d):
    assert mb.shared_memory_bound(*mb.TILED_WAVEFRONTS, lanes) == tiled
    assert mb.shared_memory_bound(*mb.THREAD_TILE_1D_WAVEFRONTS, lanes) == one_d
    assert mb.shared_memory_bound(*mb.THREAD_TILE_2D_WAVEFRONTS, lanes) == 1  # no limit
    with pytest.raises(ValueError, match="positive"):
        mb.shared_memory_bound(0, 1, lanes)


# device, (peak TFLOP/s, tiled, 1D bound in TFLOP/s, wavefronts that saturate),
# (splits, shares, atomic adds, idle %), one block per SM at n = 1000: (fits, splits)
CASES = [
    (T4, (8.14, "1/4", "2.0", "3.6", "32"), (1, "1000", "0", "0"), (False, 1)),
    (A100, (19.49, "1/4", "4.9", "8.7", "32"), (3, "336, 336 and 328", "3 million", "41"),
     (True, 1)),
    (H100, (66.91, "1/8", "8.4", "14.9", "16"), (4, "256, 256, 256 and 232", "4 million",
                                                 "52"), (True, 2)),
]


@pytest.mark.parametrize("device, peak, split, one_block", CASES,
                         ids=["T4", "A100", "H100"])
def test_rendered_numbers_for_each_gpu(device, peak, split, one_block):
    b = mb.bounds(device, n=1000)
    text = mb.phrases(b)
    tflops, frac, bound_tiled, bound_1d, saturating = peak
    assert b.peak_tflops == pytest.approx(tflops, abs=0.01)
    assert (text["frac_tiled"], text["bound_tiled"], text["bound_1d"],
            text["saturating_2d"]) == (frac, bound_tiled, bound_1d, saturating)
    assert text["peak_formula"].startswith(f"{device['sm_count']} SMs \u00d7 {b.lanes} ")
    assert b.tiles == 64 and b.slots == 2 * device["sm_count"]
    splits, shares, adds, idle = split
    assert (b.splits, text["shares"], text["atomic_adds"], text["idle_pct"]) == \
        (splits, shares, adds, idle)
    assert sum(b.shares) == 1000
    assert (b.one_block_fits, b.splits_one) == one_block
    # the prose follows the case: no split on a T4, no one-block kernel there either
    assert ("returns 1" in text["split_predicted"]) == (splits == 1)
    assert (text["split_costs"] == "") == (splits == 1)
    assert ("not the case" in text["one_block_case"]) == (not one_block[0])
    # no idle SMs on a T4 (64 tiles, 40 SMs): the sentence says so, not "0% of the SMs"
    assert text["tiles_idle"] == (f"{idle}% of the SMs get no tile at all" if idle != "0"
                                  else "every SM gets a tile, and 16 of the 80 places "
                                       "for blocks stay empty")


def test_the_bounds_are_what_the_launchers_do():
    """Bounds reads the launchers' own rules: the shares sum to k as _shares cuts them,
    and split_k's default blocks per SM is the one the 2D kernels promise the compiler."""
    assert inspect.signature(mf.split_k).parameters["blocks_per_sm"].default == \
        mm.BLOCKS_PER_SM_2D
    for n in (1000, 777, 4096):
        b = mb.bounds(H100, n=n)
        assert len(b.shares) == mf._shares(n, n, n, b.splits)[0]
        assert sum(b.shares) == n
    assert mb.bounds(H100, n=4096).splits == 1 and mb.bounds(H100, n=4096).idle == 0
    assert mb.bounds(H100, n=4096).atomic_adds == 0


@pytest.mark.parametrize("device, error", [
    ({"name": "simulator", "compute_capability": None, "sm_count": None,
      "clock_khz": None}, "compute_capability, sm_count, clock_khz"),
    ({**H100, "clock_khz": 0}, "clock_khz"),
])
def test_a_device_without_its_properties_is_refused(device, error):
    with pytest.raises(ValueError, match=error):
        mb.bounds(device)


def test_bad_size_is_refused():
    with pytest.raises(ValueError, match="positive int"):
        mb.bounds(H100, n=0)
