"""The course's solutions as a student would hand them in.

Checkers never count kernels from ``kernels.solutions`` as the reader's work
(kernels.checks.launches), so tests load a solution module from its source under a
name outside the ``kernels`` package: its kernels are then new kernels, written
"by the student", exactly as when the same code is pasted into a notebook.

The copies are files in a folder on sys.path, not modules made in memory: on a GPU
machine the tracer runs in a fresh simulator process (kernels.trace.remote), which
imports a kernel's module by name from the caller's sys.path.
"""

import atexit
import importlib
import pathlib
import shutil
import sys
import tempfile

SOLUTIONS = pathlib.Path(__file__).resolve().parent.parent / "kernels" / "solutions"
FOLDER = pathlib.Path(tempfile.mkdtemp(prefix="answers-"))
atexit.register(shutil.rmtree, FOLDER, ignore_errors=True)
sys.path.append(str(FOLDER))


def solution(topic):
    """kernels/solutions/<topic>.py, copied and imported as the module `answers_<topic>`."""
    name = f"answers_{topic}"
    if name not in sys.modules:
        shutil.copyfile(SOLUTIONS / f"{topic}.py", FOLDER / f"{name}.py")
        importlib.invalidate_caches()  # the folder's listing is cached by the path finder
    return importlib.import_module(name)
