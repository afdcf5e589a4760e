import pytest

from kernels import hardware


@pytest.mark.parametrize("cc, lanes", [((6, 0), 64), ((7, 0), 64), ((7, 5), 64), ((8, 0), 64),
                                       ((8, 6), 128), ((8, 9), 128), ((9, 0), 128)])
def test_fp32_lanes_per_sm_follow_nvidias_table(cc, lanes):
    assert hardware.fp32_lanes_per_sm(cc) == lanes
    assert hardware.fp32_lanes_per_sm(list(cc)) == lanes  # recordings store lists


@pytest.mark.parametrize("name, sms, cc, clock_khz, tflops", [
    ("T4", 40, (7, 5), 1_590_000, 8.14),          # NVIDIA's T4 sheet: 8.1 TFLOP/s
    ("A100 SXM", 108, (8, 0), 1_410_000, 19.49),  # A100 sheet: 19.5
    ("H100 SXM", 132, (9, 0), 1_980_000, 66.91),  # H100 SXM sheet: 67
])
def test_fp32_peak_matches_the_data_sheets(name, sms, cc, clock_khz, tflops):
    assert hardware.fp32_peak_tflops(sms, cc, clock_khz) == pytest.approx(tflops, abs=0.01)


def test_unknown_or_malformed_devices_are_refused_plainly():
    with pytest.raises(ValueError, match="unknown for sm_55.*known: sm_60"):
        hardware.fp32_lanes_per_sm((5, 5))
    with pytest.raises(TypeError, match="compute capability"):
        hardware.fp32_lanes_per_sm(None)
    with pytest.raises(ValueError, match="positive"):
        hardware.fp32_peak_tflops(0, (9, 0), 1_980_000)
