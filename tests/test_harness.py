import numpy as np
import pytest

import kernels
from kernels import harness
from ptx import assert_compiles

PTX_SIGNATURES = {"_spin_kernel": ["void(int64)"], "_flush_kernel": ["void(int32[::1], int32[::1])"],
                  "_empty_kernel": ["void()"],
                  "_fma_kernel": ["void(float32[::1], float32[::1])"]}


def test_check_exact_for_integers_names_first_mismatches():
    expected = np.arange(10, dtype=np.int32)
    got = expected.copy()
    got[[3, 7]] += 1
    with pytest.raises(harness.MismatchError) as err:
        harness.check(got, expected, name="counts")
    message = str(err.value)
    assert "counts: 2 of 10 values differ" in message
    assert "at 3: got 4, expected 3" in message and "at 7: got 8, expected 7" in message


def test_check_float_tolerance_by_dtype():
    x = np.linspace(1, 2, 100, dtype=np.float32)
    assert "match" in harness.check(x * (1 + 1e-7), x)  # float32 rounding passes
    with pytest.raises(harness.MismatchError):
        harness.check(x * (1 + 1e-3), x)
    y = x.astype(np.float64)
    with pytest.raises(harness.MismatchError):
        harness.check(y * (1 + 1e-9), y)  # float64 is held to far tighter limits


def test_check_says_one_value_in_the_singular():
    assert harness.check(np.int64(7), np.int64(7), name="sum") == \
        "sum: the value matches the reference exactly"
    assert "all 3 values match" in harness.check(np.ones(3), np.ones(3))
    with pytest.raises(harness.MismatchError, match=r"sum: the value differs from the "
                       r"reference \(exactly\): got 6, expected 7"):
        harness.check(np.int64(6), np.int64(7), name="sum")


def test_check_shape_mismatch():
    with pytest.raises(harness.MismatchError, match="shape"):
        harness.check(np.zeros(3), np.zeros(4))


def test_sizes_come_from_one_place():
    for name, (full, small) in kernels.SIZES.items():
        assert kernels.size(name) == (small if kernels.SIMULATOR else full)
    with pytest.raises(KeyError, match="known"):
        kernels.size("no such problem")


def test_explicit_environment_setting_wins(tmp_path):
    import subprocess
    import sys
    code = "import kernels; print(kernels.SIMULATOR, kernels.REASON)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"NUMBA_ENABLE_CUDASIM": "1", "PATH": "/usr/bin"}).stdout
    assert "True NUMBA_ENABLE_CUDASIM=1 was set by the user" in out


@pytest.mark.skipif(not kernels.SIMULATOR, reason="the simulator refusal")
def test_timing_refuses_on_simulator():
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        harness.time_gpu(lambda: None)


def test_cudatimer_gives_no_gpu_time_on_simulator():
    with harness.CUDATimer() as t:
        pass
    assert t.e2e_ms >= 0
    assert (t.ms is None) == kernels.SIMULATOR


@pytest.mark.gpu
def test_timing_hides_launch_overhead():
    from numba import cuda
    d = cuda.device_array(1, np.float32)

    @cuda.jit
    def tiny(x):
        x[0] = 1.0

    t = harness.time_gpu(lambda: tiny[1, 1](d))
    # an empty kernel runs in a few us on the GPU; a launch costs 10+ us of host time
    assert t.ms < np.median(t.e2e_ms)


def test_compiles_to_ptx():
    assert_compiles("harness")


def _work(name, ts, dur, cat="kernel"):
    return {"cat": cat, "name": name, "ts": ts, "dur": dur}


def test_profiled_calls_are_split_at_idle_gaps_and_their_device_work_summed():
    from kernels.harness import profiler
    gap = profiler.GAP_US
    events = [
        _work("flush", 0, 50), _work("mine", 50 + gap, 10), _work("copy", 70 + gap, 5,
                                                                  "gpu_memcpy"),
        {"cat": "cpu_op", "name": "aten::sum", "ts": 60 + gap, "dur": 900},  # host: not counted
        _work("flush", 3 * gap, 50), _work("mine", 4 * gap, 7, "gpu_memset"),
        _work("mine", 4 * gap + 400, 8),  # a host wait inside the call: same call
    ]
    calls = profiler.split_calls(events, ignore=("flush",))
    assert calls == pytest.approx([0.015, 0.015])
    assert profiler.split_calls(events) == pytest.approx([0.050, 0.015, 0.050, 0.015])
    assert profiler.kernel_names(events, ignore=("flush",)) == ["mine"]


def test_overlapping_device_work_counts_once():
    from kernels.harness import profiler
    events = [_work("a", 100, 10), _work("b", 105, 10, "gpu_memcpy"),  # 100-115: 15 us
              _work("c", 106, 2), _work("d", 130, 4)]  # inside b; then 4 us after a gap
    assert profiler.split_calls(events) == pytest.approx([0.019])


def test_profiling_is_off_outside_the_bench_command():
    from kernels.harness import profiler
    assert "kernels bench" in profiler.unavailable()


PROFILED = """
import json, sys
import numpy as np
from numba import cuda
from kernels import harness
from kernels.harness import profiler
profiler.ENABLED = True
if profiler.unavailable():
    print(json.dumps({"skip": profiler.unavailable()}))
    sys.exit()
d = cuda.device_array(1 << 24, np.float32)

@cuda.jit
def fill(x):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        x[i] = 1.0

t = harness.time_gpu(lambda: fill[264, 256](d), repeats=10)
print(json.dumps({"ms": t.ms, "busy": t.busy}), flush=True)
"""


@pytest.mark.gpu
def test_profiled_busy_time_is_the_kernels_and_below_the_event_time():
    # in a process of its own: one that profiled may crash at exit (kernels.harness.profiler)
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", PROFILED], capture_output=True, text=True,
                         timeout=300).stdout
    said = json.loads(out.strip().splitlines()[-1])
    if "skip" in said:
        pytest.skip(said["skip"])
    busy, kernels = said["busy"]
    assert len(busy) == 10
    assert 0 < np.median(busy) <= said["ms"]
    assert len(kernels) == 1 and "fill" in kernels[0], kernels
