import pytest

from kernels import hardware


@pytest.mark.parametrize("cc, lanes", [((5, 2), 128), ((6, 0), 64), ((6, 1), 128),
                                       ((7, 0), 64), ((7, 5), 64), ((8, 0), 64),
                                       ((8, 6), 128), ((8, 9), 128), ((9, 0), 128),
                                       ((12, 0), 128)])
def test_fp32_lanes_per_sm_follow_nvidias_table(cc, lanes):
    assert hardware.fp32_lanes_per_sm(cc) == lanes
    assert hardware.fp32_lanes_per_sm(list(cc)) == lanes  # recordings store lists


@pytest.mark.parametrize("cc, threads", [((6, 0), 2048), ((7, 0), 2048), ((7, 5), 1024),
                                         ((8, 0), 2048), ((8, 6), 1536), ((8, 9), 1536),
                                         ((9, 0), 2048), ((12, 0), 1536)])
def test_max_threads_per_sm_follow_nvidias_table(cc, threads):
    assert hardware.max_threads_per_sm(cc) == threads


@pytest.mark.gpu
def test_the_tables_agree_with_this_gpus_own_attributes():
    from numba import cuda

    dev = cuda.get_current_device()
    assert hardware.max_threads_per_sm(dev.compute_capability) == \
        dev.MAX_THREADS_PER_MULTIPROCESSOR
    assert hardware.REGISTERS_PER_SM == dev.MAX_REGISTERS_PER_MULTIPROCESSOR
    assert hardware.WARP == dev.WARP_SIZE


@pytest.mark.parametrize("name, sms, cc, clock_khz, tflops", [
    ("T4", 40, (7, 5), 1_590_000, 8.14),          # NVIDIA's T4 sheet: 8.1 TFLOP/s
    ("A100 SXM", 108, (8, 0), 1_410_000, 19.49),  # A100 sheet: 19.5
    ("H100 SXM", 132, (9, 0), 1_980_000, 66.91),  # H100 SXM sheet: 67
])
def test_fp32_peak_matches_the_data_sheets(name, sms, cc, clock_khz, tflops):
    assert hardware.fp32_peak_tflops(sms, cc, clock_khz) == pytest.approx(tflops, abs=0.01)


def test_unknown_or_malformed_devices_are_refused_plainly():
    with pytest.raises(ValueError, match="unknown for sm_55.*known: sm_50"):
        hardware.fp32_lanes_per_sm((5, 5))
    with pytest.raises(ValueError, match="unknown for sm_30"):
        hardware.max_threads_per_sm((3, 0))
    with pytest.raises(TypeError, match="compute capability"):
        hardware.max_threads_per_sm((9, 0, 1))
    with pytest.raises(TypeError, match="compute capability"):
        hardware.fp32_lanes_per_sm(None)
    with pytest.raises(ValueError, match="positive"):
        hardware.fp32_peak_tflops(0, (9, 0), 1_980_000)
