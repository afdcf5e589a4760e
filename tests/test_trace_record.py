"""kernels.trace: what is recorded, and the clear refusals."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import cooperative, gridstride, reduction, trace
from kernels.trace import hooks, record, remote

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="records on the simulator")


@cuda.jit
def shared_then_global_kernel(x, out, count):
    tile = cuda.shared.array(8, np.float32)
    t = cuda.threadIdx.x
    tile[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    out[cuda.grid(1)] = tile[7 - t]
    cuda.atomic.add(count, 0, 1)


@cuda.jit(device=True)
def a_device_function(x):
    return x + 1


ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_access_is_recorded_with_block_thread_index_kind_and_epoch(rng):
    x = rng.random(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    count = np.zeros(1, np.int32)
    t = trace.launch(shared_then_global_kernel, (2, 8), x, out, count)
    launch = t.launch()
    assert launch.kernel == "shared_then_global_kernel"
    assert launch.grid == (2, 1, 1) and launch.block == (8, 1, 1)
    assert launch.arrays["tile"]["space"] == "shared"
    assert launch.arrays["x"]["space"] == "global"
    counts = {}
    for a in launch.accesses:
        counts[(a.array, a.kind)] = counts.get((a.array, a.kind), 0) + 1
    # per thread: read x, write tile, read tile, write out, atomic on count
    assert counts == {("x", "read"): 16, ("tile", "write"): 16, ("tile", "read"): 16,
                      ("out", "write"): 16, ("count", "atomic"): 16}
    reads_of_tile = [a for a in launch.accesses if a.array == "tile" and a.kind == "read"]
    assert all(a.index == (7 - a.thread[0],) and a.epoch == 1 for a in reads_of_tile)
    reads_of_x = {(a.block[0], a.thread[0]): a.index for a in launch.of("x")}
    assert reads_of_x[(1, 3)] == (11,)
    seqs = [a.seq for a in launch.accesses]
    assert len(set(seqs)) == len(seqs)
    # The kernel really ran, writing into the caller's arrays.
    np.testing.assert_array_equal(out, x.reshape(2, 8)[:, ::-1].ravel())
    assert count[0] == 16


def test_launches_through_a_host_function_are_all_recorded():
    a = np.arange(300, dtype=np.int32)
    t = trace.run(reduction.sum_shared_tree, a, blocks=1)
    assert [l.kernel for l in t.launches] == ["zero_kernel", "sum_shared_tree_kernel"]
    assert t.launch("sum_shared_tree_kernel").arrays["partials"]["shape"] == (256,)


@cuda.jit
def _add_each(x, total):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i])


def _added_through_hints(x):
    total = np.zeros(1, np.int64)
    _add_each[2, 32](cuda.In(x), cuda.InOut(total))
    return total


def test_arrays_passed_as_cuda_in_and_inout_are_recorded():
    """cuda.In(x), cuda.Out(x), cuda.InOut(x) launch a kernel on x: its accesses are
    traced as those of x (they were not recorded at all: an answer that passes its
    arrays so read nothing, to the tracer, and raced with nothing)."""
    x = np.arange(50, dtype=np.int64)
    t = trace.run(_added_through_hints, x)
    launch = t.launch("_add_each")
    assert launch.arrays["x"]["shape"] == (50,) and launch.arrays["total"]["shape"] == (1,)
    assert sorted(a.index[0] for a in launch.of("x")) == list(range(50))
    assert {a.kind for a in launch.of("total")} == {"atomic"}


@cuda.jit
def racy_count_kernel(count):  # WRONG on purpose: a plain read-modify-write of one word
    count[0] += 1


def test_a_launch_of_thousands_of_blocks_is_traced_block_by_block():
    """The simulator runs a launch one block at a time: 64 blocks of 128 threads (8,192
    threads, more than a cooperative launch may have) are traced, race included."""
    t = trace.launch(racy_count_kernel, (64, 128), np.zeros(1, np.int32))
    assert len({a.block for a in t.launch().accesses}) == 64
    assert trace.races(t)


def test_a_launch_too_large_is_refused_before_it_runs():
    a = np.zeros(70_000, np.float32)
    with pytest.raises(trace.TraceTooLarge, match=r"70,000 threads; the tracer accepts at "
                                                  r"most 65,536\."):
        trace.launch(gridstride.vector_add_gridstride_kernel, (700, 100), a, a, a)
    m = np.zeros((20, 300))
    with pytest.raises(trace.TraceTooLarge, match=r"5,120 threads; the tracer accepts at "
                                                  r"most 4,096 in a cooperative launch"):
        trace.launch(cooperative.rows_grid_sync_kernel, (20, 256), m)


def test_too_many_accesses_stop_the_recording(monkeypatch):
    monkeypatch.setattr(record, "MAX_ACCESSES", 100)
    a = np.zeros(1000, np.float32)
    with pytest.raises(trace.TraceTooLarge, match="more than 100 memory accesses"):
        trace.run(gridstride.vector_add_gridstride, a, a, blocks=1, threads=32)


def test_not_a_kernel_is_refused_with_what_is_accepted():
    with pytest.raises(TypeError, match="not a CUDA kernel: trace.launch takes a function "
                                        "decorated with @cuda.jit"):
        trace.launch(np.add, (1, 1), 1, 2)
    with pytest.raises(TypeError, match="a_device_function is not a CUDA kernel"):
        trace.launch(a_device_function, (1, 1), 1)
    with pytest.raises(TypeError, match="is a kernel: use trace.launch"):
        trace.run(gridstride.vector_add_gridstride_kernel)
    with pytest.raises(TypeError, match=r"configuration must be \(blocks, threads\)"):
        trace.launch(gridstride.vector_add_gridstride_kernel, 4)
    with pytest.raises(trace.TraceError, match="launched no kernel"):
        trace.run(np.add, 1, 2)


def test_warp_shuffles_need_a_gpu():
    a = np.ones(64, np.int32)
    with pytest.raises(trace.TraceError, match="shfl_down_sync.*needs a real GPU"):
        trace.launch(reduction.sum_warp_shuffle_kernel, (1, 32), a, np.zeros(1, np.int64))


def test_the_simulator_is_left_as_it_was():
    a = np.arange(10, dtype=np.float32)
    trace.run(gridstride.vector_add_gridstride, a, a, blocks=1, threads=4)
    assert hooks._active is None
    out = gridstride.vector_add_gridstride(a, a, blocks=1, threads=4)  # untraced: works
    np.testing.assert_array_equal(out, 2 * a)
    from numba.cuda.simulator.cudadrv import devicearray

    assert devicearray.FakeWithinKernelCUDAArray.__getitem__.__module__ != hooks.__name__


def test_on_a_gpu_machine_the_trace_runs_in_a_simulator_process(capsys):
    """What trace.launch does when kernels.SIMULATOR is False, run here directly."""
    a = np.arange(20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    kernel = remote.portable(gridstride.vector_add_one_per_element_kernel)
    assert isinstance(kernel, remote.Named)
    t = remote.in_simulator_process(trace._launch_kernel, (kernel, (2, 4), a, a, out), {})
    assert "tracing on the Numba CUDA simulator in a separate process" in capsys.readouterr().out
    cov = trace.coverage(t, "out")
    assert cov.missed == [(i,) for i in range(8, 20)]


NOTEBOOK_CELL = """
import numpy as np
from numba import cuda

SCALE = 3


@cuda.jit(device=True)
def scaled(v):
    return v * SCALE


@cuda.jit
def scaled_reverse_kernel(x, out):
    tile = cuda.shared.array(8, np.float32)
    t = cuda.threadIdx.x
    tile[t] = scaled(x[t])
    cuda.syncthreads()
    out[t] = tile[7 - t]
"""


def test_a_kernel_defined_in_a_notebook_travels_as_its_code(tmp_path, rng):
    cell = tmp_path / "cell.py"  # where IPython keeps a cell's source, in effect
    cell.write_text(NOTEBOOK_CELL)
    namespace = {"__name__": "__main__"}
    exec(compile(NOTEBOOK_CELL, str(cell), "exec"), namespace)
    kernel = remote.portable(namespace["scaled_reverse_kernel"])
    assert isinstance(kernel, remote.Code)
    x = rng.random(8, dtype=np.float32)
    t = remote.in_simulator_process(trace._launch_kernel,
                                    (kernel, (1, 8), x, np.zeros(8, np.float32)), {})
    launch = t.launch()
    assert launch.kernel == "scaled_reverse_kernel"
    assert launch.arrays["tile"]["space"] == "shared"  # named from its code
    assert trace.races(t) == []
    reads = {a.thread[0]: a.index for a in launch.of("tile", ("read",))}
    assert reads == {i: (7 - i,) for i in range(8)}


def test_a_notebooks_host_function_travels_as_its_code(tmp_path, rng):
    source = NOTEBOOK_CELL + """

def reverse_scaled(x):
    out = np.zeros_like(x)
    scaled_reverse_kernel[1, 8](x, out)
    return out
"""
    cell = tmp_path / "cell.py"
    cell.write_text(source)
    namespace = {"__name__": "__main__"}
    exec(compile(source, str(cell), "exec"), namespace)
    fn = remote.portable(namespace["reverse_scaled"])
    assert isinstance(fn, remote.Code)
    t = remote.in_simulator_process(fn, (rng.random(8, dtype=np.float32),), {})
    assert t.launch().kernel == "scaled_reverse_kernel" and trace.races(t) == []


def test_a_lambda_travels_as_its_code_and_runs_numpy_there(rng):
    """A lambda (or a function made inside another) has no name its module could give it
    back by, even where the module can be imported: it travels as its code. Rebuilt, it
    has the builtins that C code looks up (NumPy's x.sum() imports through them)."""
    host = lambda x: x[x > 0].sum()  # noqa: E731  (a host answer that launches nothing)
    fn = remote.portable(host)
    assert isinstance(fn, remote.Code)
    x = rng.standard_normal(16)
    assert fn.resolve()(x) == host(x)
    with pytest.raises(trace.NothingLaunched):
        remote.in_simulator_process(fn, (x,), {})


@pytest.mark.parametrize("end, how", [
    ("__import__('os').kill(__import__('os').getpid(), 9)", "killed by signal SIGKILL"),
    ("__import__('os')._exit(3)", "exit status 3"),
    ("__import__('sys').exit(4)", "exit status 4"),
    ("(_ for _ in ()).throw(BaseException('gone'))", "exit status 1: BaseException: gone")])
def test_a_simulator_process_that_ends_without_a_result_says_how(end, how):
    """The grader tells a kill (the OOM killer's SIGKILL: its limit, flagged) from code
    that ended its own process (the student's) by these words, as for an answer process;
    the process's stderr begins with the course's banner, which says nothing of why."""
    fn = remote.portable(eval(f"lambda x: {end}"))
    with pytest.raises(trace.ProcessEnded) as err:
        remote.in_simulator_process(fn, (np.zeros(2),), {})
    assert str(err.value) == f"the simulator process running your code ended ({how})"


SCRIPT = """
import numpy as np
from kernels.trace import remote
from kernels import gridstride

print("the script ran", flush=True)  # no __main__ guard: a spawned child would rerun it
a = np.arange(8, dtype=np.float32)
t = remote.in_simulator_process(gridstride.vector_add_gridstride, (a, a),
                                {"blocks": 1, "threads": 8})
print("traced", len(t.launches), flush=True)
"""


def test_tracing_from_a_script_without_a_main_guard_runs_the_script_once(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("the script ran") == 1 and "traced 1" in proc.stdout


def test_code_without_a_source_file_travels_with_what_it_names():
    """A grader's cell has no file: the code object travels, and with it the device
    function and the global array it names; a global that only shares a name with an
    attribute it reads (x in cuda.threadIdx.x) stays behind."""
    source = ("import numpy as np\nfrom numba import cuda\n"
              "OFFSETS = np.arange(4, dtype=np.int32)\nx = (v for v in OFFSETS)\n"
              "@cuda.jit(device=True)\ndef shifted(v, i):\n    return v + OFFSETS[i]\n"
              "@cuda.jit\ndef k(x):\n    i = cuda.threadIdx.x\n    x[i] = shifted(x[i], i)\n")
    namespace = {"__name__": "__main__"}
    exec(compile(source, "<no file>", "exec"), namespace)
    kernel = remote.portable(namespace["k"])
    assert kernel.names["shifted"][1].kind == "device"
    t = remote.in_simulator_process(trace._launch_kernel,
                                    (kernel, (1, 4), np.zeros(4, np.int32)), {})
    writes = {a.index for a in t.launch().of("x", ("write",))}
    assert t.launch().kernel == "k" and writes == {(i,) for i in range(4)}


def test_what_cannot_travel_is_named():
    source = ("from numba import cuda\n"
              "def make(step):\n"
              "    @cuda.jit(device=True)\n    def add(v):\n        return v + step\n"
              "    return add\n"
              "add_one = make(1)\n"
              "@cuda.jit\ndef k(x):\n    x[0] = add_one(x[0])\n"
              "pending = (i for i in range(3))\n"
              "@cuda.jit\ndef g(x):\n    x[0] = len(pending)\n")
    namespace = {"__name__": "__main__"}
    exec(compile(source, "<cell>", "exec"), namespace)
    with pytest.raises(trace.TraceError, match="add uses variables of the function that "
                                               "made it"):
        remote.portable(namespace["k"])
    with pytest.raises(trace.TraceError, match=r"refers to pending \(generator\), which "
                                               "the simulator process cannot rebuild"):
        remote.portable(namespace["g"])


def test_the_book_figures_traced_calls_travel_to_a_simulator_process(rng):
    """On a GPU machine every traced figure runs its calls in a child process: the
    streams figure's call, which makes streams and device buffers, must travel too."""
    from kernels.trace import figures

    a = rng.integers(-9, 9, 37).astype(np.int32)
    t = remote.in_simulator_process(figures._pipelined, (a, a, np.zeros(37, np.int32), 3), {})
    assert len(t.operations) == 12 and trace.stream_races(t) == []


def test_a_launch_with_arguments_its_kernel_does_not_take_raises_as_a_launch_does():
    """The tracer bound only as many arguments as the kernel names: a kernel of the
    wrong signature ran under it, where the simulator and a GPU refuse the launch."""
    @cuda.jit
    def one_argument(out):
        out[cuda.grid(1)] = 1

    with pytest.raises(TypeError, match=r"one_argument\(\): too many positional"):
        trace.launch(one_argument, (1, 4), np.zeros(4), np.zeros(4))
