"""Notebooks that try to forge a grade, each with the points it must get
(tests/test_grading.py grades them, on the simulator and on a GPU).

Every cheat sits where an answer's own code runs: in a decorator factory that the
cheated kernel's definition calls, in the kernel's body, or in the cheated host
function itself. Each notebook also
answers another exercise correctly, which must keep its points: a cheat costs its own
exercise only. The gridstride notebooks cheat on reverse_inplace (3 points) beside a
correct saxpy (1 point); the reduction notebooks cheat on argmax (2 points) beside a
correct mean_variance (1 point).
"""

import textwrap

from hostile import SAXPY
from cheats_copies import COPY_TRICKS
from planted import module_cell, notebook, solution_source

KERNEL_CHEAT = '''\
from numba import cuda


def _trick():
{body}
    return cuda.jit


@_trick()
def reverse_inplace_kernel(x):
    pass  # reverses nothing: the trick above is meant to earn the points
'''

# name -> the trick's body (run when the cheated kernel is defined)
KERNEL_TRICKS = {
    # the six techniques
    "adds-a-checker-to-the-registry": '''
import dataclasses
from kernels import checks
from kernels.checks import core, registry
checks.always_passes = lambda kernel: core.Report(
    "reverse_inplace", [core.Case("forged", True, "")])
label = "gridstride-ex-reverse"
registry.EXERCISES[label] = dataclasses.replace(registry.EXERCISES[label],
                                                check_name="always_passes")
''',
    "replaces-a-numpy-internal": '''
import numpy
numpy._core.numeric.less_equal = lambda *args, **kwargs: numpy.True_
numpy.array_equal = lambda *args, **kwargs: True
numpy.allclose = lambda *args, **kwargs: True
''',
    "a-thread-rewrites-the-cases": '''
import sys
import threading


def rewrite():
    while True:
        for frame in list(sys._current_frames().values()):
            while frame is not None:
                cases = frame.f_locals.get("cases")
                if isinstance(cases, list):
                    for i, case in enumerate(cases):
                        if isinstance(case, tuple) and len(case) == 3:
                            cases[i] = (case[0], case[1], case[2] * 0)
                frame = frame.f_back


threading.Thread(target=rewrite, daemon=True).start()
''',
    "walks-frames-for-the-nonce": '''
import json
import os
import sys

forged = {"event": "exercise", "label": "gridstride-ex-reverse", "passed": True,
          "report": "forged"}
for frame in list(sys._current_frames().values()):
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and "nonce" in value:
                line = json.dumps(dict(forged, nonce=value["nonce"])) + "\\n"
                for key in ("fd", "replies"):
                    if isinstance(value.get(key), int):
                        os.write(value[key], line.encode())
                labels = value.get("labels")
                if isinstance(labels, list) and forged["label"] in labels:
                    labels.remove(forged["label"])
        send = frame.f_locals.get("send")
        if callable(send):
            send("exercise", label=forged["label"], passed=True, report="forged")
        frame = frame.f_back
''',
    "a-profile-hook-flips-a-flag": '''
import sys
import threading


def hook(frame, event, arg):
    if frame.f_code.co_name in ("run_cases", "reverse_inplace"):
        frame.f_globals["SIMULATOR"] = False
        frame.f_globals["REPEATS"] = 0
        frame.f_globals["check"] = lambda *args, **kwargs: None


sys.setprofile(hook)
threading.setprofile(hook)
''',
    # six more
    "marks-every-case-passed-with-gc": '''
import gc
import threading


def mark():
    while True:
        for obj in gc.get_objects():
            if type(obj).__name__ == "Case":
                obj.passed = True


threading.Thread(target=mark, daemon=True).start()
''',
    "patches-builtins": '''
import builtins
builtins.all = lambda items: True
builtins.isinstance = lambda obj, kind: True if kind is Exception else type(obj) is kind \\
    or kind in type(obj).__mro__
''',
    "rewrites-and-reloads-the-checkers": '''
import importlib
import pathlib
from kernels.checks import core
path = pathlib.Path(core.__file__)
try:
    path.write_text(path.read_text() + (
        "\\ndef run_cases(exercise, cases, run, **options):\\n"
        "    return Report(exercise, [Case('forged', True, '')])\\n"))
except OSError:
    pass
importlib.reload(core)
''',
    "swaps-sys-modules": '''
import sys
import types
fake = types.ModuleType("kernels.harness.checking")
fake.check = lambda *args, **kwargs: None
fake.MismatchError = type("MismatchError", (Exception,), {})
fake.to_host = lambda a: a
sys.modules["kernels.harness.checking"] = fake
import kernels.checks.core as core
core.check = fake.check
''',
    "writes-through-ctypes": '''
import ctypes
import gc
from kernels.checks import core
namespace = gc.get_referents(core.Report.__dict__)[0]
ctypes.pythonapi.PyDict_SetItem(ctypes.py_object(namespace), ctypes.py_object("passed"),
                                ctypes.py_object(property(lambda self: True)))
ctypes.pythonapi.PyType_Modified(ctypes.py_object(core.Report))
''',
    "forges-launches-and-answers-on-the-host": '''
import threading
from kernels.checks import launches, steps


def host_answer(kernel, configuration, args, output, output_name):
    launches.add({launches.YOURS: 1})
    return args[output][::-1].copy()


steps.STEPS["launch_guarded"] = host_answer
steps.STEPS["traced_launch"] = lambda kernel, configuration, args: ("failed", "nothing", "")
''',
    "reads-the-graders-files": '''
import glob
import os
found = []
for pattern in ("/proc/*/environ", "/proc/*/cmdline", "/tmp/kernels-grade-*/judge.log",
                os.path.expanduser("~/*")):
    for path in glob.glob(pattern):
        try:
            found.append(open(path, "rb").read(10000))
        except OSError:
            pass
assert not any(b"SECRET" in text for text in found)
''',
}

# Kernels whose bodies do what only Python can: the simulator runs a kernel as Python
KERNEL_BODIES = {
    # a decorator named bare runs when the kernel is defined, in every process that
    # loads the kernel exercises' definitions: the certifying one too (an outside review)
    "a-bare-decorator-turns-off-the-compile": '''\
from numba import cuda


def gpu(f):
    cuda.compile_ptx = lambda *a, **k: ("", None)
    return cuda.jit(f)


@gpu
def reverse_inplace_kernel(x):
    for i in range(cuda.grid(1), x.size // 2, cuda.gridsize(1)):
        j = sorted([i, x.size - 1 - i])[1]  # a list and sorted(): Python only
        x[i], x[j] = x[j], x[i]
''',
    "a-kernel-that-calls-numpy": '''\
import numpy as np
from numba import cuda


@cuda.jit
def reverse_inplace_kernel(x):
    if cuda.grid(1) == 0:
        x[:] = np.flip(x.copy_to_host())  # the host's NumPy, inside a "kernel"
''',
    "a-kernel-that-walks-frames": '''\
import sys

from numba import cuda


@cuda.jit
def reverse_inplace_kernel(x):
    frame = sys._getframe()
    while frame is not None:
        frame.f_globals.get("launches", sys)._counts = None
        frame = frame.f_back
''',
}

# A host function whose kernel only Python can run (a 16-bit atomic, which a GPU cannot
# compile), defined in the notebook's cells: right on the simulator, wrong on a GPU
HOST_KERNEL_BODIES = {
    "a-host-function-launching-a-16-bit-atomic": '''\
import numpy as np
from numba import cuda


@cuda.jit
def _max_kernel(x, best):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(best, 0, x[i])


@cuda.jit
def _first_kernel(x, best, first, ties):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == best[0]:
            cuda.atomic.min(first, 0, i)
            cuda.atomic.add(ties, 0, 1)  # 16 bits: a GPU has no 16-bit atomic


def argmax(x, blocks):
    d_x = cuda.to_device(x)
    best = cuda.to_device(np.full(1, np.iinfo(x.dtype).min, x.dtype))
    first = cuda.to_device(np.full(1, x.size, np.int64))
    ties = cuda.to_device(np.zeros(1, np.int16))
    _max_kernel[blocks, 128](d_x, best)
    _first_kernel[blocks, 128](d_x, best, first, ties)
    return int(first.copy_to_host()[0])
''',
}

HOST_CHEAT = '''\
import numpy as np
from numba import cuda


@cuda.jit
def _touch(x):
    pass


@cuda.jit
def _copy(x, y):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y[i] = x[i]


@cuda.jit
def _racy_argmax(x, best):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        b = best[0]
        if b < 0 or x[i] > x[b] or (x[i] == x[b] and i < b):
            best[0] = i  # a plain read, compare and write: the threads race here


def argmax(x, blocks):
    _touch[1, 1](cuda.to_device(x))  # a kernel of mine ran...
{body}
'''

# name -> the cheated host function's body (argmax: fn(x, blocks))
HOST_TRICKS = {
    "reads-expected-from-the-checkers-frame": '''
    import sys
    for frame in list(sys._current_frames().values()):
        while frame is not None:
            if "expected" in frame.f_locals:
                return frame.f_locals["expected"]
            frame = frame.f_back
    return -1
''',
    "an-empty-kernel-then-numpy": '''
    return int(np.argmax(x))  # ...but the answer is NumPy's
''',
    "a-kernel-that-reads-everything-then-numpy": '''
    d_x = cuda.to_device(x)
    copy = cuda.device_array_like(d_x)
    _copy[blocks, 128](d_x, copy)  # every element read, and written, by a kernel
    copy.copy_to_host()
    return int(np.argmax(x))  # ...but the answer is NumPy's, from the host's input
''',
    "a-kernel-hands-back-the-input-for-numpy": '''
    d_x = cuda.to_device(x)
    copy = cuda.device_array_like(d_x)
    _copy[blocks, 128](d_x, copy)  # every element read, and written, by a kernel
    return int(np.argmax(copy.copy_to_host()))  # ...and NumPy's answer, from that copy
''',
    "a-kernel-carries-numpys-answer": '''
    d_x = cuda.to_device(x)
    _copy[blocks, 128](d_x, cuda.device_array_like(d_x))  # every element read by a kernel
    answer = cuda.to_device(np.full(1, np.argmax(x), np.int64))
    out = cuda.device_array(1, np.int64)
    _copy[1, 32](answer, out)  # ...and NumPy's answer written to the output by one
    return int(out.copy_to_host()[0])
''',
    "a-thread-started-during-a-case": '''
    import os
    import threading

    def forge():
        for fd in range(3, 64):
            try:
                os.write(fd, b'{"label": "reduction-ex-argmax", "passed": true}\\n')
            except OSError:
                pass

    threading.Thread(target=forge, daemon=True).start()
    return int(np.argmax(x))
''',
    # a race the simulator's value cases rarely show, and the tracer's analyses, in the
    # answer's own process, made to find nothing (they run in the judge)
    "blinds-the-tracers-analyses": '''
    import kernels.trace as tracer
    from kernels.trace import hazards
    for module in (tracer, hazards):
        module.races = module.stream_races = module.barriers = lambda *a, **k: []
    d_x = cuda.to_device(x)
    best = cuda.to_device(np.full(1, -1, np.int64))
    _racy_argmax[blocks, 128](d_x, best)
    return int(best.copy_to_host()[0])
''',
}


def _indent(body, prefix):
    return textwrap.indent(textwrap.dedent(body).strip("\n"), prefix)


def kernel_cheat(body):
    return notebook([SAXPY, KERNEL_CHEAT.format(body=_indent(body, "    "))], "gridstride")


def host_cheat(body):
    mean_variance = module_cell("reduction", solution_source("reduction"),
                                ["reduction-ex-mean-variance"])
    return notebook([mean_variance, HOST_CHEAT.format(body=_indent(body, "    "))],
                    "reduction")


# The host functions of a notebook have their kernels compiled for a GPU first in one
# process that loads all of their code (kernels.grading.judge): code of one that stops
# every compile there must not fail the other's kernels, nor earn its own exercise
# anything. Its argmax launches no kernel of its own.
BREAKS_THE_COMPILER = '''\
import numpy as np


def _refuse(*args, **kwargs):
    from numba.core.errors import TypingError
    raise TypingError("no kernel compiles where this code ran")


def _sabotage():
    from numba import cuda
    cuda.compile_ptx = _refuse
    return np.argmax


np_argmax = _sabotage()


def argmax(x, blocks):
    return int(np_argmax(x))
'''

# Code that makes Numba's compile succeed wherever it runs, at two depths, in the module
# that makes a host function's kernel (the cheated argmax's own, or the correct
# mean_variance's): the kernel is compiled for a GPU where none of it ran, made again from
# its description (kernels.grading.copies), so a kernel that does not compile still fails.
FORGES_THE_COMPILE = """
from numba import cuda as _c
import numba.cuda.compiler as _compiler
_c.compile_ptx = lambda *a, **k: None
_compiler.compile_ptx = lambda *a, **k: None
_compiler.compile_cuda = lambda *a, **k: None
"""


def _module(name, source, exports):
    """A cell that runs `source` as the notebook's module `name` and takes `exports`."""
    return "\n".join([
        "import sys", "import types", f"_m_{name} = types.ModuleType({name!r})",
        f"sys.modules[{name!r}] = _m_{name}",
        f"exec(compile({source!r}, '<{name}>', 'exec'), _m_{name}.__dict__)",
        *(f"{e} = _m_{name}.{e}" for e in exports)])


def _compile_forgery(in_argmax):
    bad = HOST_KERNEL_BODIES["a-host-function-launching-a-16-bit-atomic"]
    correct = solution_source("reduction")
    if in_argmax:
        bad += FORGES_THE_COMPILE
    else:
        correct += FORGES_THE_COMPILE
    return notebook([module_cell("reduction", correct, ["reduction-ex-mean-variance"]),
                     _module("answers_argmax", bad, ["argmax"])], "reduction")


# Code of one exercise that ends the process it is loaded in when Numba compiles there:
# no certifying process loads it, so the correct mean_variance keeps its point, and the
# judge goes on.
CRASHES_THE_SHARED_CERTIFIER = """
import os
import numpy as np
from numba import cuda as _c


@_c.jit
def _touch(x):
    pass


_c.compile_ptx = lambda *a, **k: os._exit(3)


def argmax(x, blocks):
    _touch[1, 1](_c.to_device(x))
    return int(np.argmax(x))
"""


def _crashes_the_shared_certifier():
    correct = solution_source("reduction")
    return notebook([module_cell("reduction", correct, ["reduction-ex-mean-variance"]),
                     _module("answers_argmax", CRASHES_THE_SHARED_CERTIFIER, ["argmax"])],
                    "reduction")


# name -> (notebook, points it must get, the exercise cheated on)
CASES = {"crashes-the-shared-certifier": (_crashes_the_shared_certifier(), 1,
                                         "reduction-ex-argmax"),
         "forges-the-compile-in-its-own-module": (_compile_forgery(True), 1,
                                                  "reduction-ex-argmax"),
         "forges-the-compile-in-another-exercises-module": (_compile_forgery(False), 1,
                                                             "reduction-ex-argmax"),
         **{name: (kernel_cheat(body), 1, "gridstride-ex-reverse")
            for name, body in KERNEL_TRICKS.items()},
         **{name: (notebook([SAXPY, source], "gridstride"), 1, "gridstride-ex-reverse")
            for name, source in KERNEL_BODIES.items()},
         **{name: (host_cheat(body), 1, "reduction-ex-argmax")
            for name, body in HOST_TRICKS.items()},
         **{name: (notebook([module_cell("reduction", solution_source("reduction"),
                                         ["reduction-ex-mean-variance"]), source],
                            "reduction"), 1, "reduction-ex-argmax")
            for name, source in {**HOST_KERNEL_BODIES,
                                 "stops-every-compile-where-it-runs": BREAKS_THE_COMPILER
                                 }.items()},
         **{name: (notebook([module_cell("reduction", solution_source("reduction"),
                                         ["reduction-ex-mean-variance"]), source],
                            "reduction"), 1, "reduction-ex-argmax")
            for name, source in COPY_TRICKS.items()}}
