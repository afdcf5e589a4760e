"""The cores this test run may use, read before an xdist worker keeps to one of them.

Each xdist worker keeps to a core of its own (conftest.py): the simulator runs every
CUDA thread as an OS thread, and threads of one process spread over cores fight for
Python's lock (tests/test_mutex.py alone: 15.1 s wall and 16.6 s of CPU spread over two
cores; 10.5 s and 10.3 s on one). What a worker starts that places its own processes
(the grader: kernels.grading.runner.placement) or runs alongside it (the book build) is
given them all again (spread).
"""

import os

ALL = sorted(os.sched_getaffinity(0))


def keep_to(index):
    """Run this process, and what it starts, on the index-th core (modulo their number)."""
    os.sched_setaffinity(0, {ALL[index % len(ALL)]})


def spread():
    """For subprocess's preexec_fn: the child may run on every core of the test run."""
    os.sched_setaffinity(0, ALL)
