"""What a sandboxed process does first (kernels.grading.confine): its core, its threads'
stacks, and the words that say a limit of the grader's, not the student's code, stopped
a cell."""

import json
import subprocess
import sys

import pytest

import cores
from kernels.grading import confine

LIMITS = {"processes": 200, "memory": 3 << 30}


@pytest.mark.parametrize("err, said", [
    (RuntimeError("can't start new thread"), "limit of 200 processes and threads per "
                                              "notebook, or of 3 GiB of memory per process"),
    (BlockingIOError(11, "Resource temporarily unavailable"), "limit of 200 processes"),
    (MemoryError(), "limit of 3 GiB of memory per process"),
])
def test_an_error_that_a_limit_raises_is_said_to_be_the_grader_s_limit(err, said):
    words = confine.limit_reached(err, LIMITS)
    assert said in words and "the grader's limit" in words and "--max-" in words


@pytest.mark.parametrize("err", [RuntimeError("boom"), ValueError("can't start new thread"),
                                 FileNotFoundError(2, "missing")])
def test_other_errors_are_the_notebook_s_own(err):
    assert confine.limit_reached(err, LIMITS) == ""
    assert confine.limit_reached(MemoryError(), {}) == ""  # no limits: not the grader's


def test_threads_get_small_stacks_so_that_a_block_of_1024_fits_the_memory_limit(tmp_path):
    code = ("import json, sys, threading; from kernels.grading import confine; "
            "confine.enter(json.loads(sys.argv[1])); print(threading.stack_size())")
    job = json.dumps({"scratch": str(tmp_path), "limits": {}})
    shown = subprocess.run([sys.executable, "-c", code, job], capture_output=True,
                           text=True, check=True).stdout.split()[-1]
    assert int(shown) == confine.THREAD_STACK
    assert 1024 * confine.THREAD_STACK <= 1 << 30  # a block's stacks: a GiB at most


@pytest.mark.skipif(len(cores.ALL) < 2, reason="needs two cores to choose from")
def test_a_process_keeps_to_the_core_it_runs_on_and_what_it_starts_too():
    code = ("import os, subprocess, sys; from kernels.grading import confine; "
            "confine.keep_to_this_core(); "
            "cpu = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[36]); "
            "print(sorted(os.sched_getaffinity(0)) == [cpu], sorted(os.sched_getaffinity(0))); "
            "sys.stdout.flush(); "
            "subprocess.run([sys.executable, '-c', 'import os; "
            "print(sorted(os.sched_getaffinity(0)))'])")
    out = subprocess.run(cores.spread([sys.executable, "-c", code]), capture_output=True,
                         text=True, check=True).stdout.split("\n")
    assert out[0].startswith("True [") and out[1] == out[0][len("True "):], out
