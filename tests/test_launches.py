"""Kernel launches are counted on the GPU and on the simulator, by who wrote the kernel,
and a checker fails an answer that launched none of the student's kernels."""

import re

import numpy as np
from numba import cuda

from kernels import checks
from kernels.checks import launches, registry
from kernels.checks.core import Case, Report


@cuda.jit
def fill_kernel(out, value):  # defined in the test module: the "student's" kernel
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


@cuda.jit(device=True)
def twice(v):
    return 2 * v


@cuda.jit
def fill_twice_kernel(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = twice(value)


def test_origin_sorts_kernels_by_their_module():
    assert launches.origin(fill_kernel.py_func) == launches.YOURS
    from kernels import gridstride

    assert launches.origin(gridstride.vector_add_gridstride_kernel.py_func) == launches.COURSE
    from answers import solution  # the same source loaded outside the package: the student's

    assert launches.origin(solution("gridstride").saxpy_kernel.py_func) == launches.YOURS

    class FromSolutions:
        __module__ = "kernels.solutions.gridstride"

    assert launches.origin(FromSolutions) == launches.SOLUTION

    class FromNumba:  # device_array[:] = value launches such a kernel on a GPU
        __module__ = "numba.cuda.cudadrv.devicearray"

    assert launches.origin(FromNumba) == launches.LIBRARY


def test_each_launch_counts_once_and_device_functions_do_not():
    out = np.zeros(37, np.float32)
    before = launches.counts()
    fill_kernel[2, 8](out, 3.0)
    fill_twice_kernel[1, 4](out, 2.0)  # calls a device function in every thread
    fill_kernel.forall(out.size)(out, 1.0)
    made = launches.counts() - before
    assert made[launches.YOURS] == 3 and made[launches.COURSE] == 0
    assert (out == 1.0).all()


def test_a_host_answer_fails_with_a_clear_message():
    report = checks.lock_sum_positive(lambda x: x[x > 0].sum())  # right values, no kernel
    assert not report.passed
    assert all("no kernel of yours was launched" in c.detail for c in report.cases)


def test_every_checker_finds_its_launch_rule():
    for ex in registry.EXERCISES.values():
        assert registry.by_check_name(ex.check_name) is ex
    assert registry.EXERCISES["matmul-ex-choose-tile"].launch is None
    assert {ex.launch for ex in registry.by_chapter("streams")} == {launches.ANY}
    assert registry.by_check_name("no_such_checker") is None


def test_report_of_no_cases_never_passes():
    assert not Report("x", []).passed
    assert Report("x", [Case("a", True, "")]).passed


def test_a_kernel_checker_says_when_it_is_given_no_kernel():
    class HostKernel:
        def __getitem__(self, launch):
            return lambda m: None

    # a failed case in the checker's words, not an error of the answer's
    report = checks.rotate_rows(HostKernel())
    assert not report.passed and re.search("rotate_rows needs a CUDA kernel.*got HostKernel",
                                           str(report)) and "raised" not in str(report)
    report = checks.normalize_by_max(twice)  # a device function is not a kernel
    assert not report.passed and "not a CUDA kernel" in str(report)


def test_within_skipped_no_kernel_but_numba_s_runs_and_new_arrays_are_poisoned():
    """What an answer gives without its kernels: its launches do nothing, and an array it
    makes empty holds no value an earlier call left in memory. After, all as before."""
    out = np.full(37, 5.0, np.float32)
    makers = (np.empty, np.empty_like, cuda.device_array, cuda.device_array_like)
    before = launches.counts()
    with launches.skipped():
        fill_kernel[2, 8](out, 3.0)
        made = [np.empty(300), np.empty_like(out), cuda.device_array(40, np.int32),
                cuda.device_array_like(out)]
    assert (out == 5.0).all()  # the launch did nothing, and was still counted
    assert (launches.counts() - before)[launches.YOURS] == 1
    for array in made:
        host = array if isinstance(array, np.ndarray) else array.copy_to_host()
        if host.dtype.kind == "f":  # loud: a sum into never-zeroed memory gives NaN
            assert np.isnan(host).all()
        else:
            assert (host == np.frombuffer(b"\xa5" * 4, np.int32)[0]).all()
    fill_kernel[2, 8](out, 3.0)
    assert (out == 3.0).all()
    assert (np.empty, np.empty_like, cuda.device_array, cuda.device_array_like) == makers


def test_a_launch_with_cuda_in_and_inout_has_its_arrays_types():
    """A kernel launched with cuda.In(x) takes x's type: the grader compiles it so."""
    args = (cuda.In(np.zeros(3, np.uint8)), cuda.InOut(np.zeros((2, 2), np.float32)))
    assert launches.signature(args) == "void(uint8[::1], float32[:, ::1])"
