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
    assert {"_getframe", "f_back", "get_objects"} <= set(introspection)
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


@pytest.mark.parametrize("source, found", [
    # a dunder spelled only at run time, of an object the reading can name: the launch
    # record's globals, two getattrs from a kernel's launch (tests/cheats.py)
    ("def f(k):\n    t = type(k[1, 1])\n    d = '_' + '_{}__'\n"
     "    return getattr(getattr(t, d.format('call')), d.format('globals'))\n",
     "getattr() of a name built at run time"),
    ("def f(k, name):\n    setattr(k, name, None)\n", "setattr() of a name built at run time"),
    ("def f(k):\n    return [getattr(k, a) for a in dir(k)]\n",
     "getattr() of a name built at run time"),
    ("def f(k):\n    read = getattr\n    return read(k, 'x')\n", "getattr as a value"),
    ("import functools\ndef f(k):\n    return functools.reduce(getattr, ['a', 'b'], k)\n",
     "getattr as a value"),
    ("def f(k):\n    return vars(k)\n", "vars() of a name built at run time"),
    ("def f(k):\n    return type(k).__dict__['_' + '_call__']\n", "__dict__"),
    # raw memory without ctypes: an array protocol offered with id() of any object
    ("import numpy as np\nclass Raw:\n    def __init__(self, o):\n"
     "        self.__array_interface__ = {'data': (id(o), False), 'shape': (64,), "
     "'typestr': '|u1', 'version': 3}\ndef f(k):\n    np.asarray(Raw(k))[:] = 0\n",
     "a store to __array_interface__"),
    ("import numpy as np\nclass Raw:\n    __array_interface__ = None\n"
     "def f(k):\n    return np.asarray(Raw())\n", "__array_interface__"),
    ("import numpy as np, types\ndef f(k):\n    return np.asarray(types.SimpleNamespace("
     "__array_interface__={'data': (id(k), False)}))\n", "__array_interface__"),
    ("import numpy as np\ndef f(k):\n    return np.asarray(type('R', (), "
     "{'__array_interface__': {}})())\n", "__array_interface__"),
    ("import numpy as np\ndef f(k):\n    return np.ctypeslib.as_array(k, (8,))\n",
     "ctypeslib"),
])
def test_names_the_reading_cannot_see_fail_closed(source, found):
    """An attribute by a name built at run time, raw memory through an array protocol:
    the reading cannot tell what they reach, so they count as introspection (a list of
    names to refuse holds none of a string's)."""
    assert found in reached(source)[1]


@pytest.mark.parametrize("source", [
    "from numba import cuda\ndef f(x):\n    return getattr(cuda, 'atomic').add",
    "import numpy as np\ndef f(x):\n    return hasattr(x, 'copy_to_host')",
    "import numpy as np\ndef f(x):\n    return np.asarray(x).__array_interface__['shape']",
    "class Box:\n    def __init__(self, x):\n        self.x = x\ndef f(x):\n    return Box(x).x",
    # a stand-in of the student's for a kernel's launch (tests/planted.py, host_only)
    "class Fake:\n    def __getitem__(self, config):\n        return self\n"
    "    def __call__(self, *args):\n        return None\ndef f(x):\n    return Fake()",
    "def f(x):\n    with open('notes.txt', 'w') as out:\n        out.write(str(x))",
    # correct answers an outside review found refused (2026-11-28)
    "LOG = 'timings.csv'\ndef f(x):\n    with open(LOG, 'a') as log:\n        log.write('1')",
    "from numba import cuda\ndef f(x):\n"
    "    return x if hasattr(x, '__cuda_array_interface__') else cuda.to_device(x)",
    "class Timer:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n"
    "            setattr(self, k, v)\n    def fields(self):\n        return vars(self)\n"
    "def f(x):\n    return Timer(n=x).fields()",
    "def f(x):\n    try:\n        return 1 / x\n    except Exception as e:\n"
    "        raise RuntimeError(e.__class__.__name__) from e",
    "import re\ndef f(x, pattern):\n    return re.compile(pattern).findall(x)",
    "from numba import cuda\ndef f(x):\n    assert cuda.is_available()\n    return x",
    "import gc\nfrom numba import cuda\ndef f(x):\n    d = cuda.to_device(x)\n"
    "    del d\n    gc.collect()",  # the object heap's walkers (get_objects) are found
    "memory = 'system'\nlabel = 'simulator'\ndef f(x):\n    return memory, label",
])
def test_attributes_and_files_by_names_it_can_read_are_plain(source):
    assert reached(source) == ([], [], [])


@pytest.mark.parametrize("source", [
    # routes an outside review (2026-11-28) took past the reading, each to the launch
    # record or the module table: the package bound to another name, sys by another
    # module, the builtins by a key, the standard library running or resolving strings,
    # frames by other attributes, memory by strides
    "import kernels\ndef f(x):\n    k = kernels\n    return k.checks.launches",
    "import kernels\ndef f(x):\n    return (k := kernels).checks",
    "import kernels\ndef f(x, k=kernels):\n    return k.checks",
    "import kernels\ndef f(x):\n    return [kernels][0].checks",
    "import kernels\ndef f(x):\n    return (lambda: kernels)().checks",
    "import os\ndef f(x):\n    return os.sys.modules['kernels.' + 'checks']",
    "from os import sys as s\ndef f(x):\n    return s.modules",
    "def f(x):\n    return globals()['__builtins__']['__import__']('kernels')",
    "import timeit\ndef f(x):\n    timeit.timeit('import kernels', number=1)",
    "import pydoc\ndef f(x):\n    return pydoc.locate('kernels.' + 'checks')",
    "from unittest import mock\ndef f(x):\n"
    "    with mock.patch('kernels.%s.launches._skipping' % 'checks', False):\n        return x",
    "import string\ndef f(x, k):\n    return string.Formatter().get_field('0.checks', [k], {})",
    "import numpy as np\ndef f(x):\n"
    "    return np.lib.stride_tricks.as_strided(np.zeros(1), (2,), (id(x),))",
    "import logging\ndef f(x):\n    return logging.currentframe().f_builtins",
    # processes of the answer's own, which run code the reading never sees (a review of
    # the forked answer processes, 2026-11-28)
    "import os, sys\ndef f(x):\n    os.spawnvp(os.P_NOWAIT, sys.executable, [sys.executable])",
    "import asyncio\ndef f(x):\n    return asyncio.create_subprocess_exec('python')",
    "from concurrent.futures import ProcessPoolExecutor\ndef f(x):\n"
    "    return ProcessPoolExecutor().submit(abs, x)",
])
def test_routes_an_outside_review_found_are_refused(source):
    assert any(reached(source)[:2])


def test_common_words_among_the_library_doors_are_plain_as_the_answer_s_own_names():
    assert reached("import time\ndef locate(x, v):\n    return x\n"
                   "def f(x):\n    profile = {'timeit': time.perf_counter()}\n"
                   "    socket = locate(x, 1)\n    return profile['timeit'], socket") == \
        ([], [], [])
    assert "timeit" in reached("from timeit import timeit\ndef f(x):\n    return timeit('1')")[1]
