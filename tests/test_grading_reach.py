"""What an answer's code reaches beyond its exercise (kernels.grading.reach): the
grader's own modules by any spelling, introspection, the simulator's flag; and only in
the statements the answer needs."""

import textwrap

import pytest

from kernels.grading import extract, reach


def cells(*sources):
    return [{"cell_type": "code", "source": textwrap.dedent(s)} for s in sources]


def reached(source, names=("f",)):
    found, _ = extract.statements(cells(source))
    return reach.reach(extract.needed(found, list(names)))


def test_reach_names_the_grader_s_modules_and_introspection():
    found, _ = extract.statements(cells("""
        import sys
        import gc
        def f(x):
            from kernels.checks import core
            sys.modules["kernels.grading.answers"]
            return sys._getframe().f_back, gc.get_objects()
        """))
    grader, introspection, flags = reach.reach(extract.needed(found, ["f"]))
    assert grader == ["kernels.checks", "kernels.checks.core", "kernels.grading.answers"]
    assert {"_getframe", "f_back", "gc", "get_objects"} <= set(introspection)
    assert flags == []


@pytest.mark.parametrize("source", [
    "from numba.core.config import ENABLE_CUDASIM\ndef f(x):\n    return ENABLE_CUDASIM",
    "from kernels import SIMULATOR\ndef f(x):\n    return SIMULATOR",
    "import numba\ndef f(x):\n    return numba.config.ENABLE_CUDASIM",
    "import os\ndef f(x):\n    return os.environ['NUMBA_ENABLE_CUDASIM']",
    "from numba import cuda\ndef f(x):\n    return cuda.simulator",
])
def test_an_answer_that_asks_whether_it_runs_on_the_simulator_is_found(source):
    assert reached(source)[2]


def test_the_chapter_s_import_line_is_no_use_of_the_grader_s_modules():
    # `checks` is bound beside `streams` by the chapter's own line; the answer uses streams
    assert reached("""
        from kernels import checks, harness, plots, streams
        def f(a, chunks):
            return streams.chunk_bounds(len(a), chunks)
        """) == ([], [], [])


@pytest.mark.parametrize("source", [
    "from kernels import checks, streams\ndef f(x):\n    return checks.core",
    "from kernels import checks, streams\ndef f(x):\n    return globals()['checks']",
    "import kernels.checks as c\ndef f(x):\n    return c",
    "import kernels as k\ndef f(x):\n    return k.checks.core",
    "import kernels\ndef f(x):\n    return getattr(kernels, 'checks')",
    "import kernels\ndef f(x, name):\n    return getattr(kernels, name)",
    "import kernels\ndef f(x):\n    return vars(kernels)",
    "from kernels import streams\ndef f(x):\n    return streams.__dict__",
    "import importlib\ndef f(x):\n    return importlib.import_module('kernels.checks')",
])
def test_a_use_of_the_grader_s_modules_is_found_by_any_spelling(source):
    assert reached(source)[0]
