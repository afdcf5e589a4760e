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
comparison, and the answer steps that run beside the reader's function
(kernels.checks.steps). In a notebook both run here; under the grader the first half
runs in its judge and the steps in a process of their own, which has no other module
of kernels.checks but the launch record and the exercise table, so that the reader's
code never meets the cases or the comparison.
"""

import importlib
import pkgutil


def gather():
    """Import every checker module and put its __all__ in this namespace (readers call
    `checks.<name>`): on first use,
    not on import, so that a process that needs only the exercise table
    (kernels.checks.registry, which imports through this package) does not import Numba
    (the grader's command line). Returns the names."""
    names = ["Report"]
    for info in pkgutil.iter_modules(__path__):
        if info.name != "core":
            module = importlib.import_module(f"{__name__}.{info.name}")
            for name in module.__all__:
                globals()[name] = getattr(module, name)
                names.append(name)
    globals()["Report"] = importlib.import_module(f"{__name__}.core").Report
    globals()["__all__"] = names
    return names


def __getattr__(name):  # PEP 562: called only for a name not yet in this namespace
    if name.startswith("__") and name != "__all__":
        raise AttributeError(name)
    if name in {info.name for info in pkgutil.iter_modules(__path__)}:
        return importlib.import_module(f"{__name__}.{name}")  # `from kernels.checks import x`
    gather()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():  # what a notebook's tab completion lists
    return sorted(set(globals()) | set(gather()))
