"""kernels.checks.races: the race case of the checkers, and no false alarm from the
tracer on the book's own kernels at small sizes (the solutions and the correct planted
answers are graded race-free in test_grading)."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import (atomics, cooperative, gridstride, histogram, matmul, mutex, reduction,
                     streams, trace)
from kernels.checks import core, races, steps

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")


@cuda.jit
def racy_count_kernel(counts):
    counts[0] += 1  # every thread, no atomic


@cuda.jit
def atomic_count_kernel(counts):
    cuda.atomic.add(counts, 0, 1)


def _check(kernel, cases=(("the values", 1, 1),), exercise="a_check"):
    """run_cases with `kernel`'s race case at [2, 4] on a one-element counter."""
    race = races.kernel(kernel, (2, 4), (np.zeros(1, np.int32),))
    return core.run_cases(exercise, list(cases), lambda inputs: inputs, race=race)


def test_a_race_ends_the_check_on_the_simulator_and_names_the_accesses():
    report = _check(racy_count_kernel)
    assert not report.passed and len(report.cases) == 1
    case = report.cases[0]
    assert case.description == ("no race between threads, blocks or streams, traced at "
                                "[2, 4]")
    assert case.detail.startswith(races.PREFIX)
    explanation, *picture = case.detail.split("\n")
    assert "both touch counts[0]" in explanation and "a lost update" in explanation
    # then the race drawn (kernels.trace.diagrams), indented as the report's details
    assert picture[0] == races.INDENT + "counts[0]: counts is 1 element in global memory"
    assert sum("[RW]" in line for line in picture) == 2
    assert all(line.startswith(races.INDENT) for line in picture)


def test_a_race_free_answer_passes_the_case_after_the_others():
    report = _check(atomic_count_kernel)
    assert report.passed and len(report.cases) == 2
    assert report.cases[-1].description.startswith("no race between threads")


def test_what_the_tracer_cannot_run_fails_closed_and_is_flagged():
    """A race case that could not run is a failed case that says why, and names the
    grader's limit for the instructor: never a pass."""
    race = races.kernel(reduction.sum_warp_shuffle_kernel, (1, 32),
                        (np.ones(64, np.int32), np.zeros(1, np.int64)))
    case = race()
    assert not case.passed
    assert "the tracer could not run your code (TraceError: sum_warp_shuffle_kernel calls " \
        "cuda.shfl_down_sync" in case.detail
    assert case.grader_limit.startswith("the race case could not run (TraceError")


@pytest.mark.parametrize("how", ["exit status 3", "killed by signal SIGKILL"])
def test_a_tracer_process_that_ended_fails_the_case_as_an_answer_process_would(how):
    """On a GPU machine the trace runs in a simulator process (kernels.trace.remote):
    where it ended, the case fails in the words of an answer process's end, which the
    judge flags only for a kill (kernels.grading.judge.limits_reached); a tracer that
    cannot trace the code is the grader's limit, flagged here."""
    words = f"the simulator process running your code ended ({how})"
    case = races._case("[2, 4]", ("failed", "ended", words))
    assert not case.passed and case.always_shown and not case.grader_limit
    assert case.detail.startswith(f"{words} before its trace was written (a sys.exit or ")
    assert case.detail.endswith("so the grader cannot tell whether it races, and this case "
                                "fails")
    tracer = races._case("[2, 4]", ("failed", "tracer", "TraceError: " + words))
    assert not tracer.passed and tracer.grader_limit


def test_inside_a_graded_notebook_the_case_waits_for_the_grader(monkeypatch):
    monkeypatch.setattr(core, "DEFERRED", True)
    report = _check(racy_count_kernel)
    assert report.passed and len(report.cases) == 1
    assert report.cases[0].description.startswith("not run inside the notebook")


# Every book kernel at a small launch: (host function, its arguments, keywords).
def _book_calls(rng):
    data = rng.integers(0, 256, 300, dtype=np.uint8)
    a = rng.integers(-100, 100, 300).astype(np.int32)
    x = rng.random(300, dtype=np.float32)
    v = rng.integers(-9, 9, 37).astype(np.int32)
    u = rng.random(40)
    m = np.zeros((4, 40), np.int32)
    m[0] = rng.integers(0, 100, 40)
    p, q = rng.random((16, 16), dtype=np.float32), rng.random((16, 16), dtype=np.float32)
    calls = {f"atomics.{k}": (f, (np.zeros(1, np.int64),), {}) for k, f in atomics.VERSIONS.items()}
    calls.update({f"histogram.{k}": (f, (data,), {"blocks": 2, "threads": 64})
                  for k, f in histogram.VERSIONS.items()})
    calls.update({f"reduction.{k}": (f, (a,), {"blocks": 2})
                  for k, f in reduction.VERSIONS.items() if k not in reduction.GPU_ONLY})
    calls.update({f"mutex.{k}": (f, (x, x), {"blocks": 2, "threads": 64})
                  for k, f in mutex.VERSIONS.items()})
    calls.update({f"streams.{k}": (_pipelined, (f, v), {}) for k, f in streams.VERSIONS.items()})
    calls.update({f"cooperative.{k}": (f, (u, 3), {"threads": 16})
                  for k, f in cooperative.VERSIONS.items()})
    calls.update({f"cooperative.{k}": (f, (m.copy(),), {"blocks": 3, "threads": 16})
                  for k, f in cooperative.ROWS.items()})
    # the shared-tile versions; the register-tile ones (a 256-thread block for any
    # shape) take minutes to trace and are left to the chapter's tests
    calls.update({f"matmul.{k}": (matmul.VERSIONS[k], (p, q), {})
                  for k in ("matmul_naive", "matmul_tiled", "matmul_tiled_bounded")})
    calls.update({f"gridstride.{k}": (f, (v, v), {"threads": 16})
                  for k, f in gridstride.VERSIONS.items()})
    return calls


def _pipelined(version, v):
    return version(v, v, np.zeros_like(v), streams.Pipeline(v.size, v.dtype, 3, threads=32))


RACY = {f"atomics.{k}" for k in atomics.RACY_BY_DESIGN} | {
    f"cooperative.{k}" for k in cooperative.RACY_BY_DESIGN}
BOOK = sorted(_book_calls(np.random.default_rng(0)))


@pytest.mark.parametrize("name", BOOK)
def test_book_kernels_are_race_free_unless_racy_by_design(name):
    fn, args, kwargs = _book_calls(np.random.default_rng(5))[name]
    t = trace.run(fn, *args, **kwargs)
    found = [r.describe() for r in trace.races(t)] + [
        r.describe() for r in trace.stream_races(t)]
    if name in RACY:
        assert found, f"{name} is racy by design, and the tracer found no race"
    else:
        assert not found, found[:3]


@pytest.fixture(scope="module")
def racy_notebook():
    """The namespace of the planted RACES notebook, its cells run as the grader runs them:
    one cell per racy answer, each its topic's solution module run again with one
    change under the module's file name, so the reduction and mutex cells replace each
    other's source lines (what the tracer's process once rebuilt from)."""
    import planted
    from kernels import notebook_cells

    namespace = {"__name__": "__main__"}
    notebook_cells.run(planted.buggy_notebook(planted.RACES)["cells"], namespace,
                       strict=True)
    return namespace


# The planted races, traced through the tracer's process (each a few seconds; all of
# them take a minute): every answer whose cell a later cell's lines replaced (host
# functions naming kernels, device functions and globals of their module), and one
# of each other way a race case runs: a kernel launched by the checker, a host
# function with an atomic counter, streams, a cooperative launch.
REMOTE_RACES = ("reduction-ex-mean-variance", "reduction-ex-argmax", "reduction-ex-kahan",
                "mutex-ex-deadlock", "mutex-ex-argmax", "gridstride-ex-reverse",
                "atomics-ex-positions", "streams-ex-one-stream", "cooperative-ex-rotate")


@pytest.mark.parametrize("label", REMOTE_RACES)
def test_on_a_gpu_machine_planted_races_are_traced_in_the_tracers_process(
        label, racy_notebook, monkeypatch, capfd):
    """What the race case does where kernels.SIMULATOR is False, run here: the answer,
    defined in a notebook, travels to a simulator process of its own as its code, with
    the kernels, functions and globals it names, and its race is found there."""
    from kernels import checks
    from kernels.checks import registry

    monkeypatch.setattr(trace, "LOCAL", False)
    exercise = registry.EXERCISES[label]
    report = getattr(checks, exercise.check_name)(racy_notebook[exercise.names[0]])
    case = report.cases[0]  # on the simulator the race case runs first, and ends the check
    assert not case.grader_limit, case.detail
    assert case.detail.startswith(races.PREFIX), (case.description, case.detail)
    assert "tracing on the Numba CUDA simulator in a separate process" in capfd.readouterr().out


@cuda.jit
def _add_kernel(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[i] + b[i]


def _stream_add_without_waiting(a, b, out, stream):
    d_a, d_b = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
    d_out = cuda.device_array_like(d_a, stream=stream)
    _add_kernel[4, 32, stream](d_a, d_b, d_out)
    d_out.copy_to_host(out, stream=stream)  # WRONG on purpose: nothing waits for it


def test_a_streams_answer_that_never_waits_for_its_stream_fails():
    """The simulator's streams are synchronous, so the values come out right: the race
    case finds the host reading `out` while the stream may still be copying into it."""
    from kernels import checks

    report = checks.stream_add(_stream_add_without_waiting)
    assert not report.passed and len(report.cases) == 1
    assert "nothing makes the host wait for it: synchronize that stream" in \
        report.cases[0].detail

    def waiting(a, b, out, stream):
        _stream_add_without_waiting(a, b, out, stream)
        stream.synchronize()

    assert checks.stream_add(waiting).passed


@cuda.jit
def _own_block_max_kernel(x, out):
    """out = x / the maximum of the block's own share: right with one block only."""
    best = cuda.shared.array(1, np.float32)
    if cuda.threadIdx.x == 0:
        best[0] = x[0]
    cuda.syncthreads()
    m = x[0]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        m = max(m, x[i])
    cuda.atomic.max(best, 0, m)
    cuda.syncthreads()
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = x[i] / best[0]


def _own_block_case(kernel, rng):
    x = rng.uniform(-50, 100, 101).astype(np.float32)
    x[70] = 100.5  # in the third block's share only
    return races.kernel(kernel, (3, 16), (x, np.full_like(x, np.nan)), "[3, 16] on n=101",
                        expected=x / x.max(), output=1)


def test_a_race_free_launch_with_wrong_values_fails_with_them(rng):
    """The traced launch's values are compared too: on the simulator the value cases of
    a cooperative kernel run one block, so this is the one case with several."""
    case = _own_block_case(_own_block_max_kernel, rng)()
    assert not case.passed and not case.always_shown  # no race: the value cases run too
    assert case.description == "the values are right, traced at [3, 16] on n=101"
    assert case.detail.startswith("at [3, 16] on n=101 the values are wrong: your result: ")

    @cuda.jit
    def right(x, out):
        best = cuda.shared.array(1, np.float32)
        if cuda.threadIdx.x == 0:
            best[0] = x[0]
            for i in range(x.size):
                best[0] = max(best[0], x[i])
        cuda.syncthreads()
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            out[i] = x[i] / best[0]

    assert _own_block_case(right, rng)().passed


def test_the_expected_values_never_travel_to_the_answer(rng):
    """Under the grader the answer's side gets the step's name and plain arguments (issue
    31): the inputs and the launch, never the reference, which stays with the checker."""
    sent = []

    class Recorded(core.Elsewhere):
        def run(self, name, args):
            sent.append((name, args))
            return steps.STEPS[name](_own_block_max_kernel, *args)

    x = rng.uniform(-50, 100, 101).astype(np.float32)
    expected = np.full_like(x, 12345.5)  # a value no input holds
    case = races.kernel(Recorded(), (3, 16), (x, np.full_like(x, np.nan)), expected=expected,
                        output=1)()
    assert not case.passed and "the values are wrong" in case.detail
    (name, args), = sent
    assert name == "traced_launch"
    flat = [a for arg in args for a in (arg if isinstance(arg, (tuple, list)) else (arg,))]
    assert not any(isinstance(a, np.ndarray) and (a == 12345.5).any() for a in flat)


@cuda.jit
def _never_zeroed_locks_kernel(keys, out, locks):
    for i in range(cuda.grid(1), keys.size, cuda.gridsize(1)):
        k = keys[i]
        done = False
        while not done:
            if cuda.atomic.cas(locks, k, 0, 1) == 0:
                cuda.threadfence()
                out[k] += 1
                cuda.threadfence()
                cuda.atomic.exch(locks, k, 0)
                done = True


def test_a_spin_on_a_lock_that_never_comes_free_is_named_as_the_likely_cause(monkeypatch):
    """Locks left as cuda.device_array made them: the threads spin until the tracer's
    limit on accesses; the case says the lock never became free, not only that the
    trace grew too large."""
    from kernels.trace import record

    monkeypatch.setattr(record, "MAX_ACCESSES", 20_000)  # the spin reaches it sooner
    def locked_count(keys):
        out = cuda.to_device(np.zeros(4, np.int32))
        locks = cuda.device_array(4, np.int32)  # WRONG on purpose: never zeroed
        _never_zeroed_locks_kernel[2, 32](cuda.to_device(keys), out, locks)
        return out.copy_to_host()

    keys = np.arange(200, dtype=np.int32) % 4
    case = races.host(locked_count, (keys,), "n=200")()
    assert not case.passed and case.grader_limit
    assert "the locks in locks never became free" in case.detail
    assert "never set to 0 before the launch" in case.detail


def test_race_sizes_give_every_thread_two_grid_stride_rounds(rng):
    for threads in (512, 768, 1024):
        for _ in range(50):
            n = races.two_rounds(rng, threads)
            assert 2 * threads < n <= 2 * threads + threads // 4 and n % 32
