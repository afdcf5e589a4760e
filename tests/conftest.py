import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kernels

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(*modules): skipped where one of these modules "
                            "is not installed (the lent GPU machine has no Jupyter, "
                            "jupytext, nbformat or selenium)")


def missing(*modules):
    """Why a test that imports `modules` (top-level names) cannot run here, or None."""
    gone = [m for m in dict.fromkeys(modules) if importlib.util.find_spec(m) is None]
    return f"needs {', '.join(gone)}, which this machine does not have" if gone else None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    if kernels.SIMULATOR:
        skip = pytest.mark.skip(reason="needs a real CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    for item in items:
        why = missing(*(m for mark in item.iter_markers("needs") for m in mark.args))
        if why:
            item.add_marker(pytest.mark.skip(reason=why))
    group_by_shared_fixtures(items)


def group_by_shared_fixtures(items):
    """Under pytest-xdist (`make test`: --dist loadgroup), tests that share one of this
    suite's module- or session-scoped fixtures, directly or through another, run on
    one worker: the book build or a grading run is then made once, not once a worker."""
    tests = pathlib.Path(__file__).parent
    parent = {}

    def root(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    shared = {}
    for item in items:
        keys = [f"{d.baseid}::{d.argname}"
                for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs[-1:]
                if d.scope in ("module", "session")
                and tests in pathlib.Path(inspect.getsourcefile(d.func)).parents]
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
        shared[item] = keys
    for item, keys in shared.items():
        if keys:
            item.add_marker(pytest.mark.xdist_group(root(keys[0])))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The HTML book, built once per session with execution and warnings as errors."""
    why = missing("jupyter_book")
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("book")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    proc = subprocess.run(
        [str(pathlib.Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
         "--path-output", str(out), "--warningiserror", "--keep-going"],
        capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    return out / "_build" / "html"
