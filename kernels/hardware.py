"""What a GPU can do at most, computed from its own properties, never assumed.

* ``fp32_lanes_per_sm``: float32 multiply-add lanes per SM, by compute capability
  (the CUDA C++ Programming Guide's table of arithmetic instruction throughput:
  32-bit floating-point add, multiply, multiply-add, results per clock per SM).
* ``fp32_peak_tflops``: SMs x lanes x 2 flops per multiply-add x clock.
"""

FP32_LANES_PER_SM = {
    (6, 0): 64, (6, 1): 128, (6, 2): 128,             # Pascal: P100 has 64, GP10x 128
    (7, 0): 64, (7, 2): 64, (7, 5): 64,               # Volta, Xavier, Turing (T4)
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,  # A100 64; GA10x, Orin, Ada 128
    (9, 0): 128,                                      # Hopper (H100, H200)
    (10, 0): 128, (10, 3): 128, (12, 0): 128, (12, 1): 128,  # Blackwell
}


def fp32_lanes_per_sm(compute_capability):
    """float32 FMA lanes per SM for a compute capability such as (7, 5) or [9, 0]."""
    try:
        cc = tuple(int(v) for v in compute_capability)
    except (TypeError, ValueError):
        raise TypeError(f"compute capability must be a (major, minor) pair of ints, "
                        f"got {compute_capability!r}") from None
    if cc not in FP32_LANES_PER_SM:
        known = ", ".join(f"sm_{a}{b}" for a, b in sorted(FP32_LANES_PER_SM))
        raise ValueError(f"float32 lanes per SM unknown for sm_{cc[0]}{cc[1]}; "
                         f"known: {known}")
    return FP32_LANES_PER_SM[cc]


def fp32_peak_tflops(sm_count, compute_capability, clock_khz):
    """Peak float32 rate in TFLOP/s: SMs x lanes x 2 (a multiply-add is 2 flops) x clock."""
    if int(sm_count) <= 0 or float(clock_khz) <= 0:
        raise ValueError(f"sm_count and clock_khz must be positive, got {sm_count!r} "
                         f"and {clock_khz!r}")
    lanes = fp32_lanes_per_sm(compute_capability)
    return int(sm_count) * lanes * 2 * float(clock_khz) * 1e3 / 1e12
