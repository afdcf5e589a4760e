"""The course's solutions as a student would hand them in.

Checkers never count kernels from ``kernels.solutions`` as the reader's work
(kernels.checks.launches), so tests load a solution module from its source under a
name outside the ``kernels`` package: its kernels are then new kernels, written
"by the student", exactly as when the same code is pasted into a notebook.
"""

import importlib.util
import pathlib
import sys

SOLUTIONS = pathlib.Path(__file__).resolve().parent.parent / "kernels" / "solutions"


def solution(topic):
    """kernels/solutions/<topic>.py, loaded afresh as the module `answers_<topic>`."""
    name = f"answers_{topic}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{topic}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # inspect and the simulator look modules up by name
        spec.loader.exec_module(module)
    return sys.modules[name]
