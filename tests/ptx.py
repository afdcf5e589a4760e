"""The PTX test each topic's test module calls: compile in a process without the simulator."""

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def without_simulator(code):
    """What Python `code` prints, run in a process where Numba targets a GPU (none need
    be present: it compiles to PTX)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def assert_compiles(topic):
    """Compile kernels.TOPIC for sm_75 and sm_90; return compile_ptx's report."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, str(HERE / "compile_ptx.py"), topic],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"PTX compile of kernels.{topic} failed:\n{proc.stdout}\n{proc.stderr}"
    assert "sm_75" in proc.stdout and "sm_90" in proc.stdout
    return proc.stdout
