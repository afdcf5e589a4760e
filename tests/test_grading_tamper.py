"""The fingerprint of the grader's modules notices code that replaces their parts."""

import numpy as np

from kernels.checks import core
from kernels.grading import tamper


def test_replacing_a_function_a_method_or_code_is_noticed(monkeypatch):
    before = tamper.snapshot()
    assert tamper.changed(before) == []
    monkeypatch.setattr(core, "check", lambda *a, **k: "ok")
    monkeypatch.setattr(core.Report, "passed", property(lambda self: True))
    monkeypatch.setattr(core.call_with_time_limit, "__code__", (lambda *a, **k: 0).__code__)
    monkeypatch.setattr(core, "REPEATS", core.REPEATS + 1)
    monkeypatch.setattr(np, "isclose", lambda *a, **k: True)
    assert tamper.changed(before) == [
        "kernels.checks.core.REPEATS", "kernels.checks.core.Report.passed",
        "kernels.checks.core.call_with_time_limit", "kernels.checks.core.check",
        "kernels.checks.hints.call_with_time_limit",  # the same function, imported there
        "numpy.isclose"]


def test_new_names_caches_and_a_value_set_back_are_not_changes(monkeypatch):
    from kernels import harness

    monkeypatch.setattr(harness.timing, "_flush_buffers", None)
    before = tamper.snapshot()
    monkeypatch.setattr(harness.timing, "_flush_buffers", (1, 2))  # filled by a timing cell
    monkeypatch.setattr(core, "a_new_name", 1, raising=False)
    core.REPEATS = int(str(core.REPEATS))  # an equal number, another object
    assert tamper.changed(before) == []
