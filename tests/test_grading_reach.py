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
    assert grader == ["kernels.checks", "kernels.checks.core", "kernels.grading.answers",
                      "sys.modules (every loaded module, the grader's among them)"]
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


def test_an_import_of_a_grader_module_that_binds_only_the_package_is_no_use_of_it():
    # `import kernels.checks` binds `kernels`; the answer reads kernels.streams only
    assert reached("""
        import kernels.checks
        import kernels.streams
        def f(a, chunks):
            return kernels.streams.chunk_bounds(len(a), chunks)
        """)[0] == []
    assert reached("""
        import kernels.checks
        def f(a):
            return kernels.checks.core
        """)[0] == ["kernels.checks", "kernels.checks.core"]


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
    # the outside attack of 2026-11-27 (attack9): routes the reading could not name
    "def f(x):\n    exec('from kernels.checks import launches as L', globals())",
    "import sys\ndef f(x):\n    return getattr(sys.modules['kernels'], 'che' + 'cks')",
    "import sys\ndef f(x):\n    return vars(sys.modules['kernels'])['checks']",
    "from sys import modules\ndef f(x, k):\n    return modules[type(k).__call__.__module__]",
    "def f(x):\n    return __import__('kernels.ch' + 'ecks.launches')",
    "def f(x, code):\n    return eval(code)",
    "def f(x, m):\n    return getattr(m(), 'checks')",
    "def f(x, m):\n    return m().__dict__",
    "_s = 'from kernels.checks import launches'\ndef f(x):\n    exec(_s)",
])
def test_a_use_of_the_grader_s_modules_is_found_by_any_spelling(source):
    assert reached(source)[0]


@pytest.mark.parametrize("source", [
    "import numpy as np\ndef f(x):\n    return getattr(np, 'float' + '32')(x)",
    "def f(x):\n    return eval('x + 1')",
    "def f(x):\n    return getattr(x, 'shape')",
    # a module of the student's, made from a string the reading holds (tests/planted.py)
    "import sys, types\n_m = types.ModuleType('mine')\nsys.modules[_m.__name__] = _m\n"
    "_source = 'def g(x):\\n    return x'\nexec(compile(_source, 'mine', 'exec'), _m.__dict__)\n"
    "def f(x):\n    return _m.g(x)",
])
def test_computed_reads_of_objects_it_can_name_are_no_use_of_the_grader(source):
    assert reached(source)[0] == []


def test_the_interpreter_s_own_objects_and_the_simulator_s_internals_are_found():
    """Routes an outside attack took to the tracer's recorder and the launch beneath it
    (a hook's closure, a dunder read by getattr, numba's simulator classes)."""
    sources = ['''\
from numba import cuda


def f(x):
    for cell in getattr(cuda.to_device, "__closure__", None) or ():
        cell.cell_contents.launches.clear()
    return x
''', '''\
from numba import cuda


def f(x):
    return "<locals>" in getattr(cuda.to_device, "__qualname__", "")
''', '''\
from numba import cuda


def f(x):
    return type(x).__call__.__closure__
''', '''\
from numba.cuda.simulator.cudadrv.devicearray import FakeWithinKernelCUDAArray as _FW


def f(x):
    return _FW
''']
    found = [reached(c) for c in sources]
    assert "__closure__" in found[0][1] and "cell_contents" in found[0][1]
    assert "__qualname__" in found[1][1]
    assert "__closure__" in found[2][1] and "__call__" in found[2][1]
    assert "simulator" in found[3][2]
    plain = '''\
import numpy as np


def f(x):
    return np.asarray(x).__array_interface__["data"], f.__name__, np.__version__
'''
    assert reached(plain) == ([], [], [])


@pytest.mark.parametrize("source, found", [
    ("import os\n\ndef f(x):\n    return os.dup2(3, 9)\n", "dup2"),
    ("import os\n\ndef f(x):\n    return os.listdir('/proc/self/fd')\n", "/proc/self/fd"),
    ("def f(x):\n    return open('/proc/self/mem', 'rb')\n", "/proc/self/mem"),
    ("import operator\nimport kernels\n\ndef f(x):\n"
     "    return operator.attrgetter('checks.launches')(kernels)\n", "attrgetter"),
    ("import pkgutil\n\ndef f(x):\n    return pkgutil.resolve_name('kernels.' + x)\n",
     "resolve_name"),
    ("import pickle\n\ndef f(x):\n    return pickle.loads(x)\n", "pickle"),
    ("import subprocess\nimport sys\n\ndef f(x):\n"
     "    return subprocess.run([sys.executable, '-c', x])\n", "subprocess"),
    ("import traceback\n\ndef f(x):\n    return list(traceback.walk_stack(None))\n",
     "walk_stack"),
])
def test_the_process_s_own_descriptors_memory_and_other_doors_are_found(source, found):
    """Routes a sceptical read found past the reading: the answer process's pipes and
    memory, names resolved from strings or bytes, a child Python, frames by traceback."""
    assert found in reached(source)[1]
