"""The answer process's GPU compile (kernels.grading.answers.certify), where Numba targets
a GPU and there is none: kernels in the styles students write compile, eager signatures
included, and a body that only Python can run does not."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    from kernels.grading import answers
    answers.compile_without_device()
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

    answers.certify(eager, "void(float32[:, ::1], float32[::1], float32[::1])")
    answers.certify(lazy, "void(int32[::1])")
    for wrong, signature in ((python_only, "void(int32[::1])"), (lazy, "void(int32, int32)"),
                             (madd, "float32(float32, float32, float32)")):
        try:
            answers.certify(wrong, signature)
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
