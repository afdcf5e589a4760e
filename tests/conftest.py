import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

import kernels

import cores

ROOT = pathlib.Path(__file__).resolve().parent.parent
# A course figure a reader could not read fails the tests, and the book build they run
# (kernels.plots.STRICT_ENV; a student's own run only warns)
os.environ["COURSE_STRICT_FIGURES"] = "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(*modules): skipped where one of these modules "
                            "is not installed (the lent GPU machine has no Jupyter, "
                            "jupytext, nbformat or selenium)")
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # each xdist worker on a core of its own (tests/cores.py)
        cores.keep_to(int(worker["workerid"][2:]))


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
    items.sort(key=_needs_book)  # stable: the book's tests last (start_book_build)


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
    # the group of the tests that read the built book has one name, which the
    # scheduler below knows
    book = {root(keys[0]) for item, keys in shared.items() if keys and _needs_book(item)}
    for item, keys in shared.items():
        if keys:
            group = BOOK_GROUP if root(keys[0]) in book else root(keys[0])
            item.add_marker(pytest.mark.xdist_group(group))


BOOK_GROUP = "built_book"


@pytest.hookimpl(tryfirst=True)  # before xdist's own
def pytest_xdist_make_scheduler(config, log):
    """`make test` (--dist loadgroup): the tests that read the built book are handed to a
    worker once the book is built. xdist hands out the largest group first, and these
    are the largest: a worker then waited idle for the build (226 s of a 980 s run)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class BookLast(LoadGroupScheduling):
        def _assign_work_unit(self, node):
            if BOOK_GROUP in self.workqueue and len(self.workqueue) > 1:
                # next once built; while it builds, after the rest (a worker waits for
                # it only when nothing else is left)
                built = (_book_folder(config) / "rc").exists()
                self.workqueue.move_to_end(BOOK_GROUP, last=not built)
            super()._assign_work_unit(node)

    return BookLast(config, log)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# The book build runs the chapters: the longest single job of the suite. It starts in
# the background as soon as collection knows a selected test needs it (once for all
# xdist workers), and those tests run last, so both cores keep busy meanwhile.
BUILD = """
import pathlib, subprocess, sys
folder = pathlib.Path(sys.argv[1])
try:
    proc = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=1500)
    log, rc = proc.stdout[-6000:] + "\\n" + proc.stderr[-6000:], proc.returncode
except Exception as err:  # it ran past its time, or did not start
    log, rc = repr(err), -1
(folder / "log").write_text(log)
(folder / "rc.part").write_text(str(rc))
(folder / "rc.part").rename(folder / "rc")
"""


def _book_folder(config):
    """In this run's pytest folder, which every xdist worker shares (a worker's own is
    popen-gwN inside it) and pytest removes after a few runs."""
    base = config._tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / "book"


def _needs_book(item):
    return "built_book" in getattr(item, "fixturenames", ())


def start_book_build(config):
    """Start the book build in the background unless a worker of this run has."""
    folder = _book_folder(config)
    try:
        folder.mkdir()
    except FileExistsError:
        return folder
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    subprocess.Popen(cores.spread([sys.executable, "-c", BUILD, str(folder),
                                   str(pathlib.Path(sys.executable).parent / "jupyter-book"),
                                   "build", str(ROOT), "--path-output", str(folder / "out"),
                                   "--warningiserror", "--keep-going"]),
                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return folder


def pytest_collection_finish(session):
    if not missing("jupyter_book") and any(map(_needs_book, session.items)):
        start_book_build(session.config)


@pytest.fixture(scope="session")
def built_book(request):
    """The HTML book, built once per session with execution and warnings as errors."""
    why = missing("jupyter_book")
    if why:
        pytest.skip(why)
    rc = start_book_build(request.config) / "rc"
    deadline = time.monotonic() + 1600
    while not rc.exists():
        assert time.monotonic() < deadline, "the book build did not finish in 1,600 s"
        time.sleep(1)
    log = (rc.parent / "log").read_text()
    assert rc.read_text() == "0", f"book build failed:\n{log}"
    return rc.parent / "out" / "_build" / "html"
