"""What every process that runs a student's code does first, inside the sandbox.

Both kernels.grading.worker (the notebook, for its notes) and kernels.grading.answers
(the exercise's functions, for the judge) start here: forget an editable install's
import hook, become the sandbox's user, set the limits, and move into a scratch folder.
"""

import os
import resource
import sys

MAX_FILE_BYTES = 64 << 20  # any file the student's code writes, a log included


def drop_editable_install():
    """An editable install of this package (`pip install -e`, as in the instructor's
    checkout) adds an import hook that finds any `kernels.*` module missing from the
    private copy in the instructor's tree, kernels.solutions included: remove it."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if "kernels" not in getattr(
        sys.modules.get(getattr(finder, "__module__", "")), "MAPPING", {})]


def enter(job, folder="work"):
    """Become the sandbox's user, set its limits, and move into scratch/`folder`."""
    if job.get("user") is not None:  # root in the sandbox: become nobody in particular
        os.setgroups([])
        os.setresgid(job["user"], job["user"], job["user"])
        os.setresuid(job["user"], job["user"], job["user"])  # drops every capability
    limits = job.get("limits") or {}
    for name, value in (("NPROC", limits.get("processes")), ("DATA", limits.get("memory"))):
        if value:
            limit = getattr(resource, f"RLIMIT_{name}")
            resource.setrlimit(limit, (value, value))
    for name in ("home", "tmp", folder):
        os.makedirs(os.path.join(job["scratch"], name), exist_ok=True)
    os.chdir(os.path.join(job["scratch"], folder))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
