"""What a GPU can do at most, computed from its own properties, never assumed.

Per compute capability, from the CUDA C++ Programming Guide's tables (arithmetic
instruction throughput; technical specifications per compute capability):

* ``fp32_lanes_per_sm``: float32 multiply-add lanes per SM (results per clock per SM);
* ``max_threads_per_sm``: resident threads per SM;
* ``REGISTERS_PER_SM``: 32-bit registers per SM (64 K on every capability listed).

From a device's own SM count and clock:

* ``fp32_peak_tflops``: SMs x lanes x 2 flops per multiply-add x clock.
"""

FP32_LANES_PER_SM = {
    (5, 0): 128, (5, 2): 128, (5, 3): 128,            # Maxwell
    (6, 0): 64, (6, 1): 128, (6, 2): 128,             # Pascal: P100 has 64, GP10x 128
    (7, 0): 64, (7, 2): 64, (7, 5): 64,               # Volta, Xavier, Turing (T4)
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,  # A100 64; GA10x, Orin, Ada 128
    (9, 0): 128,                                      # Hopper (H100, H200)
    (10, 0): 128, (10, 3): 128, (12, 0): 128, (12, 1): 128,  # Blackwell
}

MAX_THREADS_PER_SM = {
    (5, 0): 2048, (5, 2): 2048, (5, 3): 2048,
    (6, 0): 2048, (6, 1): 2048, (6, 2): 2048,
    (7, 0): 2048, (7, 2): 2048, (7, 5): 1024,         # Turing: half of Volta's
    (8, 0): 2048, (8, 6): 1536, (8, 7): 2048, (8, 9): 1536,
    (9, 0): 2048,
    (10, 0): 2048, (10, 3): 2048, (12, 0): 1536, (12, 1): 1536,
}
assert MAX_THREADS_PER_SM.keys() == FP32_LANES_PER_SM.keys()

REGISTERS_PER_SM = 65_536
WARP = 32


def _capability(compute_capability):
    try:
        cc = tuple(int(v) for v in compute_capability)
    except (TypeError, ValueError):
        cc = None
    if cc is None or len(cc) != 2:
        raise TypeError(f"compute capability must be a (major, minor) pair of ints, "
                        f"got {compute_capability!r}")
    if cc not in FP32_LANES_PER_SM:
        known = ", ".join(f"sm_{a}{b}" for a, b in sorted(FP32_LANES_PER_SM))
        raise ValueError(f"per-SM facts unknown for sm_{cc[0]}{cc[1]}; known: {known}")
    return cc


def fp32_lanes_per_sm(compute_capability):
    """float32 FMA lanes per SM for a compute capability such as (7, 5) or [9, 0]."""
    return FP32_LANES_PER_SM[_capability(compute_capability)]


def max_threads_per_sm(compute_capability):
    """Threads that can be resident on one SM at once, for a compute capability."""
    return MAX_THREADS_PER_SM[_capability(compute_capability)]


def fp32_peak_tflops(sm_count, compute_capability, clock_khz):
    """Peak float32 rate in TFLOP/s: SMs x lanes x 2 (a multiply-add is 2 flops) x clock."""
    if int(sm_count) <= 0 or float(clock_khz) <= 0:
        raise ValueError(f"sm_count and clock_khz must be positive, got {sm_count!r} "
                         f"and {clock_khz!r}")
    lanes = fp32_lanes_per_sm(compute_capability)
    return int(sm_count) * lanes * 2 * float(clock_khz) * 1e3 / 1e12
