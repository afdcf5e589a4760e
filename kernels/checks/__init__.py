"""Exercise checkers: ``from kernels import checks; checks.<exercise>(your_function)``.

Each topic's checkers live in ``kernels/checks/<topic>.py`` and list themselves in
that module's ``__all__``; they are gathered here so readers need one import.
A checker runs the reader's code on random inputs, on sizes that do not divide the
block size, several times on a GPU (to expose races), each call under a time limit,
and returns a Report that says in plain words what passed and what failed. Every case
must launch a kernel the reader wrote (kernels.checks.launches): an answer computed on
the host, or by the course's own kernels and solutions, fails. Where threads, blocks
or streams can conflict, the answer is also traced once at a small launch and fails
on a race (kernels.checks.races), on the simulator too.

Each checker is written in two halves (kernels.checks.core): the cases, references and
comparison, and the answer steps that run beside the reader's function. In a notebook
both run here; under the grader the first half runs in its judge and the steps in a
process of their own, so that the reader's code never meets the comparison.
"""

import importlib
import pkgutil

from kernels.checks.core import Report  # noqa: F401

__all__ = ["Report"]
for _info in pkgutil.iter_modules(__path__):
    if _info.name != "core":
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _name in _module.__all__:
            globals()[_name] = getattr(_module, _name)
            __all__.append(_name)
