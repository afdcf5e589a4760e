"""The answer process's GPU compile (kernels.grading.targets.certify), where Numba targets
a GPU and there is none: kernels in the styles students write compile, eager signatures
included, and a body that only Python can run does not."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    from kernels.grading import targets
    targets.compile_without_device()
    import numpy as np
    from numba import cuda, float32, void

    @cuda.jit("float32(float32, float32, float32)", device=True)
    def madd(acc, u, v):
        return acc + u * v

    @cuda.jit(void(float32[:, ::1], float32[::1], float32[::1]), fastmath=True)
    def eager(a, x, y):
        y[0] = madd(a[0, 0], x[0], x[0])

    @cuda.jit
    def lazy(x):
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            x[i] = -x[i]

    @cuda.jit("void(int32[::1])")
    def python_only(x):
        x[:] = np.flip(x.copy_to_host())

    targets.certify(eager, "void(float32[:, ::1], float32[::1], float32[::1])")
    targets.certify(lazy, "void(int32[::1])")
    for wrong, signature in ((python_only, "void(int32[::1])"), (lazy, "void(int32, int32)"),
                             (madd, "float32(float32, float32, float32)")):
        try:
            targets.certify(wrong, signature)
        except Exception as err:
            print("refused", type(err).__name__)
''')


def test_students_kernels_compile_for_a_gpu_without_one_and_python_does_not():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-4:] == ["refused TypingError", "refused TypeError",
                                            "refused TypeError", ""], proc.stdout


# A cell as the grader runs it: compiled under a name that is no file, as answers.load does
CELL = '''
from numba import cuda
import numba


@cuda.jit(cache=True)
def cached(x):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        x[i] = 2 * x[i]


@cuda.jit(lineinfo=True, max_registers=32)
def annotated(x):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        x[i] = x[i] + 1


@numba.njit(cache=True)
def on_the_host(x):
    return x * 3
'''

JIT_SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    from kernels.grading import targets
    if sys.argv[1] == "shim":
        targets.jit_as_a_gpu_takes()
    if sys.argv[2] == "gpu":
        targets.compile_without_device()
    namespace = {{}}
    try:
        exec(compile({cell!r}, "<code cell 1>", "exec"), namespace)
    except Exception as err:
        print("refused", type(err).__name__, str(err)[:60])
        raise SystemExit
    if sys.argv[2] == "gpu":
        for name in ("cached", "annotated"):
            targets.certify(namespace[name], "void(float32[::1])")
        print("compiled")
    else:
        x = np.arange(5, dtype=np.float32)
        namespace["cached"][2, 3](x)
        namespace["annotated"][2, 3](x)
        print(x.tolist(), namespace["on_the_host"](2))
''').format(cell=CELL)


@pytest.mark.parametrize("where", ["simulator", "compiled for a GPU"])
def test_a_cells_jit_options_that_a_gpu_takes_are_taken(where):
    """A correct kernel with `cache=True` (Numba finds no cache file for a cell the
    grader runs: it raised on a GPU) or with options only a GPU's compiler takes
    (`lineinfo`, `max_registers`: the simulator's jit refused them) loads and runs on the
    simulator, and compiles for a GPU with its options, once the forking process set up
    jit (targets.jit_as_a_gpu_takes); without it, it did not load."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if where == "simulator" else "0")
    outputs = {}
    for setup in ("shim", "none"):
        proc = subprocess.run([sys.executable, "-c", JIT_SCRIPT, setup, "sim" if where == "simulator" else "gpu"], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs[setup] = proc.stdout.strip().splitlines()[-1]
    assert outputs["shim"] == ("compiled" if where != "simulator" else "[1.0, 3.0, 5.0, 7.0, 9.0] 6")
    assert outputs["none"].startswith("refused"), outputs
