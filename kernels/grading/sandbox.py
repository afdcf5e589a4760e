"""The OS sandbox each worker runs in: bubblewrap (``bwrap``), from the distribution.

bubblewrap is what Flatpak builds its sandboxes with: one small program, packaged by
Debian, Ubuntu and Fedora, that sets up Linux namespaces and mounts and then runs a
command. It needs no daemon and no root (Docker needs both). Inside, a worker sees:

    /grader/package            the private copy of `kernels`, read-only
    /grader/submission.ipynb   the notebook as handed in, read-only (the worker copies it)
    /tmp                       the scratch folder, a tmpfs of at most `disk` bytes: home,
                               tmp and work (the notebook's folder) in it
    the Python installation, its libraries and the system's /usr, read-only (any other
                               copy of `kernels` in them is hidden behind an empty folder)
    a new /proc, a minimal /dev with its own /dev/shm, and on a GPU the NVIDIA device
                               files and /sys

and nothing else: no network (an empty network namespace), no other submission, not
the out folder, not the home folder. The worker runs in a new PID namespace under
bwrap's init, its process 1: when the worker ends, or the grader kills that init, the
kernel kills every process the notebook started, detached ones included, and bwrap
returns only after they are gone.

Run as an ordinary user, bwrap makes a user namespace, and the worker runs as that
user; the worker's limit on processes then counts the sandbox's processes only. Run as
root, bwrap makes no user namespace (there, the worker would be root to the kernel),
and the worker drops to a random unused uid first thing: it holds CAP_SETUID and
CAP_SETGID for that alone.
"""

import dataclasses
import glob
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile

ISOLATED_BY = "KERNELS_ISOLATED_BY"  # set by a service that isolates each submission
BWRAP = "KERNELS_BWRAP"  # a bwrap binary to use instead of the one on PATH
PACKAGE, NOTEBOOK, SCRATCH = "/grader/package", "/grader/submission.ipynb", "/tmp"
SHM_BYTES = 64 << 20
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime",
       "nsswitch.conf", "passwd", "group", "fonts")  # libraries, the CUDA driver, fonts
PASSED_PATHS = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH")  # folders the driver may need
# Far above login users' ids; a clash would matter little: the sandbox sees no other
# user's processes, and no files but its own and the read-only ones above.
PRIVATE_UIDS = (1 << 20, 1 << 30)


# The most threads the simulator keeps live at once: it runs each CUDA thread of a block
# as an OS thread, a whole block live where the kernel can wait (a barrier), and a
# cooperative launch's blocks all live (at most 3 blocks, kernels.trace.blocks), each of
# up to 1,024 threads. The limit on processes counts threads (RLIMIT_NPROC), so it must
# hold these and Python's, NumPy's and the grader's own threads besides.
SIMULATED_THREADS = 3 * 1024
SPARE_THREADS = 1024


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one submission may use: processes and threads (the simulator's live threads
    and room to spare; a fork bomb stops here), memory of each process (private
    writable memory: heap, arrays, thread stacks, kernels.grading.confine.THREAD_STACK
    for each simulated thread), and bytes in its scratch folder."""
    processes: int = SIMULATED_THREADS + SPARE_THREADS
    memory: int = 16 << 30
    disk: int = 1 << 30


def default_memory(jobs):
    """The machine's memory shared by the notebooks graded at once, within 4 to 16 GiB:
    a notebook on the simulator uses about 2 GiB (22 exercises' checks)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(max(total // jobs, 4 << 30), 16 << 30)


def executable():
    """The bwrap to run, or None."""
    return os.environ.get(BWRAP) or shutil.which("bwrap")


def _python_folders(library_paths):
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix,
               os.path.dirname(os.path.realpath(sys.executable)), *library_paths}
    for name in PASSED_PATHS:
        folders.update(p for p in os.environ.get(name, "").split(os.pathsep) if p)
    folders = sorted(f for f in folders if os.path.isdir(f))
    return [f for f in folders  # each once: not those inside another, or inside /usr
            if not any(f == s or f.startswith(s.rstrip("/") + "/")
                       for s in [*SYSTEM, *(o for o in folders if o != f)])]


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """How workers are sandboxed here: `limits`, the GPU's device files or not, and
    whether bwrap runs as root without a user namespace (the worker then drops to a
    random user) or makes one."""
    limits: Limits
    gpu: bool
    as_root: bool

    def command(self, argv, folder, library_paths, package="package"):
        """The bwrap command line that runs `argv` with `folder`'s copy of the package
        (its folder `package`) and submission.ipynb as /grader/..., and the user id the
        worker must become (or None)."""
        args = [executable(), "--die-with-parent", "--new-session"]
        if self.as_root:
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                     "--unshare-cgroup-try", "--cap-drop", "ALL",
                     "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-all", "--unshare-user", "--disable-userns"]
        args += ["--proc", "/proc", "--dev", "/dev",
                 "--perms", "1777", "--size", str(self.limits.disk), "--tmpfs", SCRATCH,
                 "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
        for path in SYSTEM:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        made = {"/", SCRATCH}

        def parents(path):  # bwrap makes missing folders private (0700): the user must pass
            for parent in reversed(pathlib.PurePosixPath(path).parents):
                if str(parent) not in made:
                    made.add(str(parent))
                    args.extend(["--perms", "0755", "--dir", str(parent)])

        for name in ETC:
            parents(f"/etc/{name}")
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        folders = _python_folders(library_paths)
        for path in folders:
            parents(path)
            args += ["--ro-bind", path, path]
        for path in sys.path:  # an installed copy of the course, maybe with its solutions
            hidden = os.path.join(path, "kernels")
            if path and os.path.isdir(hidden) and any(
                    hidden.startswith(f.rstrip("/") + "/") for f in folders):
                args += ["--tmpfs", hidden, "--remount-ro", hidden]
        parents(PACKAGE)
        args += ["--ro-bind", os.path.join(folder, package), PACKAGE,
                 "--ro-bind", os.path.join(folder, "submission.ipynb"), NOTEBOOK]
        if self.gpu:
            for path in sorted(glob.glob("/dev/nvidia*")):
                args += ["--dev-bind", path, path]
            args += ["--ro-bind", "/sys", "/sys"]
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", SCRATCH, "--", *argv]
        return args, (random.SystemRandom().randrange(*PRIVATE_UIDS) if self.as_root else None)


def readable(folder):
    """Let the worker read `folder` after it dropped to another user (root's umask)."""
    for top, dirs, files in os.walk(folder):
        os.chmod(top, 0o755)
        for name in files:
            os.chmod(os.path.join(top, name), 0o644)


class Unavailable(Exception):
    """The sandbox cannot run on this machine: the message says why."""


def find(limits, library_paths, gpu):
    """The Sandbox for this machine, tried once on a trivial command; Unavailable if it
    does not run here. As root, bwrap runs without a user namespace: in one, the worker
    would stay root to the kernel, and a limit on processes does not hold for root."""
    bwrap = executable()
    if not bwrap:
        raise Unavailable("bubblewrap (bwrap) is not installed (Debian and Ubuntu: "
                          "sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap)")
    if not os.access(bwrap, os.X_OK):
        raise Unavailable(f"{bwrap} is not an executable file")
    box = Sandbox(limits, gpu, as_root=os.geteuid() == 0)
    with tempfile.TemporaryDirectory(prefix="kernels-probe-") as folder:
        os.makedirs(os.path.join(folder, "package"))
        open(os.path.join(folder, "submission.ipynb"), "w").close()
        readable(folder)
        probe = [sys.executable, "-I", "-c", f"import os; os.setgroups([]) if {box.as_root} "
                 f"else None; open({NOTEBOOK!r}).close()"]
        args, _ = box.command(probe, folder, library_paths)
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise Unavailable(f"{bwrap} did not run ({err})") from None
    if proc.returncode:
        said = (proc.stderr.strip() or f"exit status {proc.returncode}").splitlines()[-1]
        raise Unavailable(f"{bwrap} could not set up its namespaces ({said}): this machine "
                          "or container does not allow them"
                          + (" to root" if box.as_root else ""))
    return box
