"""The cores this test run may use, read before an xdist worker keeps to one of them.

Each xdist worker keeps to a core of its own (conftest.py): the simulator runs every
CUDA thread as an OS thread, and threads of one process spread over cores fight for
Python's lock (tests/test_mutex.py alone: 15.1 s wall and 16.6 s of CPU spread over two
cores; 10.5 s and 10.3 s on one). What a worker starts that keeps its own processes to
cores (the grader: kernels.grading.confine.keep_to_this_core) or runs alongside it (the
book build) is given them all again (spread).
"""

import os
import shutil

ALL = sorted(os.sched_getaffinity(0))


def keep_to(index):
    """Run this thread, and what it starts, on the index-th core (modulo their number)."""
    os.sched_setaffinity(0, {ALL[index % len(ALL)]})


def spread(argv):
    """`argv` to run on every core of the test run: through util-linux's taskset (not a
    preexec_fn, which is unsafe where threads start processes); as it is without one."""
    taskset = shutil.which("taskset")
    return [taskset, "--cpu-list", ",".join(map(str, ALL)), *argv] if taskset else argv
