import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kernels

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config, items):
    if kernels.SIMULATOR:
        skip = pytest.mark.skip(reason="needs a real CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The HTML book, built once per session with execution and warnings as errors."""
    out = tmp_path_factory.mktemp("book")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    proc = subprocess.run(
        [str(pathlib.Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
         "--path-output", str(out), "--warningiserror", "--keep-going"],
        capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    return out / "_build" / "html"
