"""The Colab install on a real GPU: record what runs, how kernels link, every notebook.

Runs on the lent GPU machine in a Python whose site-packages hold the CUDA 12 stack as
the notebooks' first cell installs it on Colab (tests/colab/gpu_bundle.py packs it;
the image's own CUDA 13 numba-cuda pieces stay behind it on the path):

    # call a (carry .colab): the first part, into a venv over the image's packages
    python3 -m venv --system-site-packages --without-pip /tmp/colab
    S=$(/tmp/colab/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    python3 -m pip install -q --no-index --no-deps --no-compile --target $S .colab/a/*.whl
    tar -xJf .colab/a/libs.tar.xz -C $S
    # the image's own packages (numba, numba-cuda 0.30.4 and its start-up hook) after these
    IMG=$(python3 -c 'import numba, os; print(os.path.dirname(os.path.dirname(numba.__file__)))')
    echo "import site; site.addsitedir('$IMG')" > $S/zz-image-site-packages.pth
    # call b, on the same machine: the rest, then this script from the packed tree
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $S .colab/b/*.whl
    tar -xJf .colab/b/libs.tar.xz -C $S
    mkdir /tmp/tree && tar -xJf .colab/b/tree.tar.xz -C /tmp/tree && cd /tmp/tree
    /tmp/colab/bin/python tests/colab/gpu_check.py $OUT

It writes OUT/colab-gpu.json after each step (versions and the libraries loaded, the
first cell's probe, every kernel compiled and linked for sm_75, every chapter notebook
run top to bottom with the plain executor, with its first cell's output; CuPy is
hidden from them, see NO_CUPY).
Merge the record as book/_data/colab/gpu.json: the build-status page shows it.
"""

import concurrent.futures
import datetime
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT / "book" / "_tools"), str(ROOT / "tests")]
import colab_setup  # noqa: E402
import notebooks  # noqa: E402

PACKAGES = ["numba", "numba-cuda", "numpy", "cuda-bindings", "cuda-core", "cuda-pathfinder",
            "nvidia-nvjitlink-cu12", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvcc-cu12",
            "nvidia-cuda-runtime-cu12"]
TOPICS = sorted(p.stem[5:] for p in (ROOT / "tests").glob("test_*.py")
                if re.search(r"^PTX_SIGNATURES = ", p.read_text(), re.M))
# The image's CuPy is built for CUDA 13 and would find this stack's CUDA 12 NVRTC
# (Colab's CuPy is cupy-cuda12x): the notebooks see none, so they leave CuPy's peers out.
NO_CUPY = pathlib.Path("/tmp/no-cupy")
ENV = dict(os.environ, PYTHONPATH=f"{NO_CUPY}{os.pathsep}{ROOT}", MPLBACKEND="Agg",
           PYTHONUNBUFFERED="1")
ENV.pop("NUMBA_ENABLE_CUDASIM", None)


def versions_and_libraries():
    """Versions of the stack and the file each CUDA library was loaded from (a child
    process, so this one never initialises CUDA before the notebooks do)."""
    code = """
import json, sys
from importlib import metadata
from cuda import pathfinder
from cuda.bindings import driver, nvjitlink
import numba, numpy
from numba import cuda
out = {"versions": {}, "libraries": {}, "modules": {}}
for name in sys.argv[1:]:
    try:
        out["versions"][name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out["versions"][name] = None
for lib in ("nvJitLink", "nvrtc", "nvvm", "cudart"):
    try:
        loaded = pathfinder.load_nvidia_dynamic_lib(lib)
        out["libraries"][lib] = {"path": loaded.abs_path, "found_via": loaded.found_via}
    except Exception as err:
        out["libraries"][lib] = {"error": f"{type(err).__name__}: {err}"}
out["nvjitlink_library"] = ".".join(map(str, nvjitlink.version()))
out["modules"] = {m.__name__: m.__file__ for m in (numba, numpy, cuda, sys.modules["cuda.bindings"])}
from numba.cuda.cudadrv.libs import get_cudalib
out["libraries"]["cudadevrt"] = {"path": get_cudalib("cudadevrt", static=True)}
dev = cuda.get_current_device()
out["device"] = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
out["compute_capability"] = list(dev.compute_capability)
out["driver_cuda"] = list(cuda.cudadrv.driver.get_version())
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code, *PACKAGES], capture_output=True,
                          text=True, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"the CUDA 12 stack does not load:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().split("\n")[-1])


def compile_for_t4():
    """Every kernel of the course compiled to PTX for sm_75 and sm_90 and linked to an
    sm_75 cubin with this stack (tests/compile_ptx.py --link)."""
    result = {"topics": {}, "linked_by": set()}
    for topic in TOPICS:
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "compile_ptx.py"), topic,
                               "--link"], capture_output=True, text=True,
                              env=dict(ENV, NUMBA_ENABLE_CUDASIM="0"))
        linked = re.findall(r"sm_75: \d+ bytes of cubin linked by (\S+)", proc.stdout)
        result["topics"][topic] = {
            "ok": proc.returncode == 0, "ptx": len(re.findall(r"bytes of PTX", proc.stdout)),
            "cubins_sm_75": len(linked), "error": proc.stderr[-1500:] if proc.returncode else None}
        result["linked_by"].update(linked)
    result["linked_by"] = sorted(result["linked_by"])
    return result


def run_notebooks(out, done):
    """Every chapter notebook top to bottom (plain executor), four at a time; `done` is
    called with each result as it comes."""
    def one(path):
        start = time.monotonic()
        ok, log = notebooks.execute_all([path], out, workers=1, plain=True)[path]
        nb = json.loads((out / path.name).read_text()) if (out / path.name).exists() else None
        first = "".join(nb["cells"][0]["outputs"][0]["text"]) if nb else ""
        return path.stem, {"ok": ok, "seconds": round(time.monotonic() - start, 1),
                           "first_cell": first, "error": None if ok else log[-2000:]}

    paths = [ROOT / f"{name}.ipynb" for name in notebooks.chapters(ROOT)]
    (NO_CUPY / "cupy").mkdir(parents=True, exist_ok=True)
    (NO_CUPY / "cupy" / "__init__.py").write_text(
        'raise ImportError("CuPy is hidden here: the image has one for CUDA 13")\n')
    os.environ.update(ENV)
    out.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for future in concurrent.futures.as_completed([pool.submit(one, p) for p in paths]):
            done(*future.result())


def main(out):
    out = pathlib.Path(out)
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "python": platform.python_version(),
              "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                        "--format=csv,noheader"], capture_output=True,
                                       text=True).stdout.strip()}

    def save():
        (out / "colab-gpu.json").write_text(json.dumps(record, indent=1))

    for step, work in (("stack", versions_and_libraries),
                       ("probe", colab_setup.probe),
                       ("kernels_sm_75", compile_for_t4)):
        start = time.monotonic()
        record[step] = work()
        print(f"{step} ({time.monotonic() - start:.0f} s): {json.dumps(record[step])[:1500]}",
              flush=True)
        save()
    record["notebooks"] = {}

    def done(name, result):
        record["notebooks"][name] = result
        print(f"notebook {name}: {'ok' if result['ok'] else 'FAILED'} in {result['seconds']} s",
              flush=True)
        save()

    run_notebooks(pathlib.Path("/tmp/nb"), done)  # executed notebooks stay there


if __name__ == "__main__":
    main(sys.argv[1])
