"""What every process that runs a student's code does first, inside the sandbox.

Both kernels.grading.worker (the notebook, for its notes) and kernels.grading.answers
(the exercise's functions, for the judge) start here: forget an editable install's
import hook, become the sandbox's user, set the limits, and move into a scratch folder.
"""

import errno
import os
import resource
import sys
import threading

MAX_FILE_BYTES = 64 << 20  # any file the student's code writes, a log included
# The stack of each thread started here. The simulator runs every CUDA thread as one, and
# the memory limit counts their stacks: at Linux's usual 8 MiB, one block of 1,024
# threads reserves 8 GiB and no longer fits the default limit of two notebooks graded
# side by side. 1 MiB holds Python's whole recursion limit, even through C calls
# (RecursionError, not a crash); 512 KiB does not.
THREAD_STACK = 1 << 20


def drop_editable_install():
    """An editable install of this package (`pip install -e`, as in the instructor's
    checkout) adds an import hook that finds any `kernels.*` module missing from the
    private copy in the instructor's tree, kernels.solutions included: remove it."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if "kernels" not in getattr(
        sys.modules.get(getattr(finder, "__module__", "")), "MAPPING", {})]


def enter(job, folder="work"):
    """On the simulator, keep to the core this process runs on; become the sandbox's
    user, set its limits, and move into scratch/`folder`."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # on a GPU the kernels run there
        keep_to_this_core()
    if job.get("user") is not None:  # root in the sandbox: become nobody in particular
        os.setgroups([])
        os.setresgid(job["user"], job["user"], job["user"])
        os.setresuid(job["user"], job["user"], job["user"])  # drops every capability
    limits = job.get("limits") or {}
    for name, value in (("NPROC", limits.get("processes")), ("DATA", limits.get("memory"))):
        if value:
            limit = getattr(resource, f"RLIMIT_{name}")
            resource.setrlimit(limit, (value, value))
    into_scratch(job["scratch"], folder)
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    threading.stack_size(THREAD_STACK)


def keep_to_this_core():
    """Run this thread, and the threads and processes it starts, on the core it runs on
    now, which the system chose: where other graders share the machine, a choice of the
    grader's own would pile them onto the same cores. The simulator runs every CUDA
    thread as an OS thread, and threads of one process spread over several cores fight
    for Python's lock: a chapter's checks took about a third more time and CPU on two
    cores than on one."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        os.sched_setaffinity(0, {int(fields[36])})  # field 39, "processor"
    except (OSError, IndexError, ValueError):  # no /proc: it runs where it may
        pass


def into_scratch(scratch, folder):
    """Make the scratch folder's home, tmp and `folder`, and move into `folder`."""
    for name in ("home", "tmp", folder):
        os.makedirs(os.path.join(scratch, name), exist_ok=True)
    os.chdir(os.path.join(scratch, folder))


# How the errors that the limits raise read in a report (a thread or a process that
# could not start, memory refused), where only their text came back from the sandbox;
# and an answer process that SIGKILL ended (kernels.grading.stand_in): the kernel's OOM
# killer does that where the machine or container runs out of memory (Gradescope's 768 MB)
LIMIT_ERRORS = ("RuntimeError: can't start new thread", "MemoryError",
                "BlockingIOError: [Errno 11]", "killed by signal SIGKILL")


def says_a_limit(text):
    """Whether `text` (an error as its words came back from the sandbox) is one that a
    limit of the grader's raises (LIMIT_ERRORS)."""
    return any(e in text for e in LIMIT_ERRORS)


def limit_reached(err, limits):
    """Words for a note where `err` is what a limit of the grader's raises (a thread or
    process that could not start, memory refused), or "": the student must not read
    the grader's limit as a bug of theirs. `limits`: the job's {processes, memory}."""
    if not limits:
        return ""
    processes = f"{limits.get('processes'):,} processes and threads per notebook"
    memory = f"{(limits.get('memory') or 0) / (1 << 30):.3g} GiB of memory per process"
    if isinstance(err, MemoryError):
        reached, option = memory, "--max-memory"
    elif (isinstance(err, RuntimeError) and "can't start new thread" in str(err)
          or isinstance(err, OSError) and err.errno == errno.EAGAIN):
        reached, option = f"{processes}, or of {memory}", "--max-processes, --max-memory"
    else:
        return ""
    return (f" (this is the grader's limit of {reached}, not a CUDA error: the "
            f"simulator's largest launches fit within it; your instructor sets it with "
            f"{option})")
