"""The code of every notebook's first cell: set up a Colab runtime for the course.

first_cell.py copies this module into the cell and calls ``setup(...)`` with the
book's repository, branch and numba-cuda version; tests/test_first_cell.py tests it
here. It runs before anything of the course is installed, so it uses the standard
library only. It installs what is missing (numba-cuda for Colab's CUDA 12 and the
course's ``kernels`` package, never changing the runtime's numpy or numba), launches
one small kernel in a child process to see whether the GPU really works, says what
it found (driver, toolchain, how kernels are linked) and, when the launch fails,
what happened and the one thing to do, then chooses the simulator instead.
"""

import ctypes
import importlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

# Possibly imported already by the running kernel (a runtime's start-up may import
# numpy): an install that changed them would leave the old modules in memory and new
# files on disk, so the install keeps the versions this runtime has.
KEEP = ("numpy", "numba")
GPU_RUNTIME = "choose Runtime > Change runtime type > T4 GPU, then Runtime > Run all"

# Run in a child process, so that this kernel imports numba.cuda only after the
# choice between the GPU and the simulator is made (Numba reads it at import).
PROBE = """
import json, os
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
report = {}
try:
    import numpy as np
    from numba import cuda

    @cuda.jit
    def add_one(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    a = cuda.to_device(np.arange(40, dtype=np.int32))
    add_one[1, 64](a)
    report["ok"] = a.copy_to_host().tolist() == list(range(1, 41))
    report["device"] = cuda.get_current_device().name
    report["device"] = report["device"].decode() if isinstance(report["device"], bytes) \\
        else str(report["device"])
except Exception as err:
    report["error"] = f"{type(err).__name__}: {err}"
try:  # the linker numba-cuda's cubins come from (cuda-core 1.2 and later say)
    from cuda.core import Linker
    backend = Linker.which_backend()
    report["linker"] = str(getattr(backend, "value", backend))
except Exception:
    report["linker"] = None
print(json.dumps(report))
"""


class SetupError(RuntimeError):
    """The set-up cannot go on (an install failed): the message says what to do."""


def installed_version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def driver_cuda_version():
    """The CUDA version the NVIDIA driver supports, e.g. "12.4"; None without a driver."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int(0)
    if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return f"{version.value // 1000}.{version.value % 1000 // 10}"


def missing(repository, branch, numba_cuda):
    """The pip specs of what this runtime lacks."""
    specs = []
    # Colab comes with another numba-cuda (RAPIDS needs one): the book's is wanted
    if installed_version("numba-cuda") != numba_cuda:
        specs.append(f"numba-cuda[cu12]=={numba_cuda}")
    if importlib.util.find_spec("kernels") is None:
        specs.append(f"git+{repository}@{branch}")
    return specs


def install(specs):
    """pip-install `specs`, this runtime's numpy and numba held where they are; None if
    it worked, else the end of pip's complaint."""
    kept = {name: installed_version(name) for name in KEEP if installed_version(name)}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as constraints:
        constraints.write("".join(f"{name}=={v}\n" for name, v in kept.items()))
    print("Installing", ", ".join(specs), "...", flush=True)
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-c",
                               constraints.name, *specs], capture_output=True, text=True)
    finally:
        os.unlink(constraints.name)
    importlib.invalidate_caches()
    # numba-cuda takes over `numba.cuda` through a hook that Python runs at start-up
    # (a .pth file); this kernel started before the install, so run the hook now
    if importlib.util.find_spec("_numba_cuda_redirector"):
        import _numba_cuda_redirector  # noqa: F401
    changed = [n for n, v in kept.items() if installed_version(n) != v]
    if changed:  # the constraints prevent it; were it to happen, the student is told
        print(f"The install changed {', '.join(changed)}: Runtime > Restart session, then "
              "Runtime > Run all (nothing is lost: this is the first cell).")
    if proc.returncode != 0:
        return "\n".join(proc.stderr.strip().split("\n")[-6:])
    return None


def probe(timeout=300):
    """Launch one small kernel on the GPU in a child process: its report (a dict)."""
    try:
        proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"the first kernel launch did not finish in {timeout} s"}
    lines = proc.stdout.strip().split("\n")
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"error": (proc.stderr.strip() or proc.stdout.strip())[-600:]}


def diagnose(error, driver):
    """(what happened, the one thing to do) for a failed first launch, in plain words."""
    toolchain = f"numba-cuda {installed_version('numba-cuda')}"
    if driver is None or any(s in error for s in (
            "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device", "libcuda", "driver init")):
        return ("This runtime has no GPU.", GPU_RUNTIME)
    if "UNSUPPORTED_PTX_VERSION" in error or "PTX JIT" in error:
        return (f"The GPU's driver (CUDA {driver}) is older than the compiler of {toolchain}, "
                "so the driver could not load the kernel's PTX: nvJitLink, which would link it "
                "to a cubin instead, is missing or older than 12.3.",
                'run `%pip install -U "nvidia-nvjitlink-cu12>=12.3,<13"` in a new cell above, '
                "then Runtime > Restart session and Runtime > Run all")
    if any(s in error for s in ("ModuleNotFoundError", "ImportError", "numba_cuda",
                                "cuda.bindings", "cuda.core")):
        return (f"The install did not take effect in this running Python ({error}).",
                "Runtime > Restart session, then Runtime > Run all (what was installed stays)")
    return (f"The first kernel launch failed: {error}",
            "Runtime > Disconnect and delete runtime, then Runtime > Run all; if it fails "
            "again, report the message above")


def linking(linker):
    """How kernels are linked, from the linker cuda-core names (None: it cannot say)."""
    if linker is None:
        return "not known (this cuda-core does not say which linker it uses)"
    if "nvjitlink" in linker.lower():
        return ("nvJitLink links each kernel into a cubin for this GPU (the driver "
                "does not compile PTX, so its CUDA version may be older than the toolchain's)")
    return (f"the CUDA driver ({linker}) compiles each kernel's PTX: the driver must be as "
            "new as the toolchain's CUDA")


def setup(repository, branch, numba_cuda):
    """Install what is missing, check the GPU, choose GPU or simulator; return the choice."""
    specs = missing(repository, branch, numba_cuda)
    failed = install(specs) if specs else None
    if failed:
        still = missing(repository, branch, numba_cuda)
        if any(s.startswith("git+") for s in still) or installed_version("numba-cuda") is None:
            raise SetupError(
                f"The install failed, so the course cannot run here:\n{failed}\nIf that "
                "says the network is unreachable, check the runtime's connection and run "
                "this cell again; any other complaint is the book's to fix: please report it.")
        print(f"The install of numba-cuda {numba_cuda} failed:\n{failed}\nGoing on with "
              f"numba-cuda {installed_version('numba-cuda')}, which this runtime already has.")
    elif not specs:
        print(f"numba-cuda {numba_cuda} and the course's kernels package are already installed.")
    driver = driver_cuda_version()
    bindings = installed_version("cuda-bindings")
    nvjitlink = installed_version("nvidia-nvjitlink-cu12") or installed_version("nvidia-nvjitlink")
    print(f"Driver:    {'CUDA ' + driver if driver else 'none (no NVIDIA driver here)'}")
    print(f"Toolchain: numba-cuda {installed_version('numba-cuda')}, cuda-bindings {bindings}, "
          f"nvJitLink {nvjitlink or 'not installed'}")
    setting = os.environ.get("NUMBA_ENABLE_CUDASIM", "").strip()
    if setting not in ("", "0"):
        print("No GPU here (NUMBA_ENABLE_CUDASIM is set): the kernels run on the Numba CUDA "
              "simulator. To run on a GPU in Colab, " + GPU_RUNTIME + ".")
        return "simulator"
    report = probe() if driver else {"error": "no NVIDIA driver"}
    if report.get("ok"):
        print(f"GPU:       {report['device']}: a first kernel ran and gave the right result")
        print(f"Linking:   {linking(report.get('linker'))}")
        return "gpu"
    what, todo = diagnose(report.get("error", "the kernel gave a wrong result"), driver)
    print(f"No GPU here: {what}\nTo use a GPU: {todo}.")
    if setting == "0":  # the user's explicit setting wins, even over a failed launch
        print("NUMBA_ENABLE_CUDASIM=0 is set, so the kernels will still try the GPU.")
        return "gpu"
    if driver:  # without a driver `kernels` chooses the simulator itself, and says why
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        print("This cell sets NUMBA_ENABLE_CUDASIM=1 for this runtime.")
    print("Until then the kernels run on the Numba CUDA simulator: results are checked at "
          "small sizes, and timing plots show recorded GPU results.")
    return "simulator"
