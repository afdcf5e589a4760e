"""Notice a notebook that changed the grader's code inside its own process.

The checkers run in the notebook's process (they call its functions), so a notebook
could replace them, or what they rely on, before or while they run. The worker takes
a fingerprint of the grader's modules before the notebook runs and compares it after
the notebook and after each checker; any difference voids the grade. A fingerprint
covers every name in the watched modules and every attribute of the classes defined
there: functions by identity and code object, plain numbers and strings by value,
everything else by identity, except names that held None (caches filled on first use). It does not see changes made inside objects (a list's
items, an array's values) or below Python (C code), and code that restores what it
changed before the comparison passes: book/instructors.md says so.
"""

import sys
import types

WATCHED = ("builtins", "numpy", "numba.cuda", "numba.cuda.dispatcher",
           "numba.cuda.simulator.kernel")  # and every kernels.* module loaded
PLAIN = (int, float, str, bytes, bool)


def _modules():
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (
                name in WATCHED or name == "kernels" or name.startswith("kernels.")):
            yield name, module


def _fingerprint(value):
    if value is None:  # a cache filled on first use (harness.timing._flush_buffers): not compared
        return None
    if isinstance(value, PLAIN):
        return (type(value), value)
    if isinstance(value, types.FunctionType):
        return (id(value), id(value.__code__), id(value.__defaults__), id(value.__kwdefaults__))
    if type(value).__name__ == "FakeCUDAModule":  # the simulator's `cuda`, swapped in a launch
        return None
    return id(value)


def snapshot():
    """{(module, name): fingerprint} of the grader's modules as they are now."""
    prints = {}
    for module_name, module in _modules():
        for name, value in list(vars(module).items()):
            prints[module_name, name] = _fingerprint(value)
            if isinstance(value, type) and value.__module__ == module_name:
                for attr, member in list(vars(value).items()):
                    prints[module_name, f"{name}.{attr}"] = _fingerprint(member)
    return prints


def changed(before):
    """Names (module.name) whose fingerprint differs from `before`, or that are gone."""
    after = snapshot()
    return sorted(f"{module}.{name}" for (module, name), mark in before.items()
                  if mark is not None and after.get((module, name), "gone") not in (mark, None))
