"""The notebooks' first cell (book/_tools/colab_setup.py): each path it can take.

The GPU paths are messages, so a stand-in launch report plays the GPU where this
machine has none; the no-GPU path, the install and the probe run for real. On a GPU
machine the probe's real launch is checked too.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import kernels

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import colab_setup  # noqa: E402
import first_cell  # noqa: E402
import notebooks  # noqa: E402

OWNER, REPO, BRANCH = notebooks.book_settings(ROOT)
REPOSITORY = f"https://github.com/{OWNER}/{REPO}"
NUMBA_CUDA = notebooks.numba_cuda_version(ROOT)
PTX_ERROR = ("CudaAPIError: [222] Call to cuLinkAddData results in "
             "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
HIDE_CHECKOUT = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
                 "if 'editable' not in repr(f)]\n")  # as on Colab: `kernels` not installed


@pytest.mark.parametrize("name", notebooks.chapters(ROOT))
def test_every_notebook_opens_with_the_tested_code(name):
    nb = json.loads((ROOT / f"{name}.ipynb").read_text())
    cell = nb["cells"][0]
    assert cell["cell_type"] == "code" and cell["metadata"].get("cellView") == "form"
    assert "".join(cell["source"]) == first_cell.source(REPOSITORY, BRANCH, NUMBA_CUDA), \
        f"{name}: the first cell is not colab_setup.py's code: run `make notebooks`"


def test_cell_is_the_module_then_its_call():
    code = first_cell.source(REPOSITORY, BRANCH, NUMBA_CUDA)
    compile(code, "first cell", "exec")
    assert code.startswith("# @title ")  # Colab's form title, the code folded under it
    assert colab_setup.__doc__.strip().split("\n")[0] not in code
    assert "def setup(repository, branch, numba_cuda):" in code
    assert code.endswith(f'NUMBA_CUDA = "{NUMBA_CUDA}"  # the version the book is tested with\n'
                         "setup(REPOSITORY, BRANCH, NUMBA_CUDA)\nimport kernels  # decides GPU "
                         "or simulator, once, before numba.cuda is imported")


def run_cell(tmp_path, pip_exit=0, pip_says="", numba_cuda=NUMBA_CUDA, hide_checkout=True,
             **env):
    """The whole first cell in a fresh Python, with a stand-in pip that logs its call."""
    fake = tmp_path / "fake" / "pip"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import json, os, sys\n"
        "constraints = open(sys.argv[sys.argv.index('-c') + 1]).read()\n"
        "json.dump({'argv': sys.argv[1:], 'constraints': constraints}, "
        "open(os.environ['PIP_LOG'], 'w'))\n"
        f"sys.stderr.write({pip_says!r})\nsys.exit({pip_exit})\n")
    code = first_cell.source(REPOSITORY, BRANCH, numba_cuda)
    path = [str(tmp_path / "fake")] + ([] if hide_checkout else [str(ROOT)])
    run = subprocess.run(
        [sys.executable, "-c", (HIDE_CHECKOUT if hide_checkout else "") + code],
        cwd=tmp_path, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(path), PIP_LOG=str(tmp_path / "log"),
                 **env))
    log = tmp_path / "log"
    return run, json.loads(log.read_text()) if log.exists() else None


def test_grader_knows_the_first_cell():
    """The grader runs `import kernels` in place of the first cell: it installs nothing."""
    from kernels import notebook_cells

    assert first_cell.source(REPOSITORY, BRANCH, NUMBA_CUDA).startswith(
        notebook_cells.SETUP_PREFIX)



def test_install_takes_the_package_from_the_repository_and_holds_numpy_and_numba(tmp_path):
    run, pip = run_cell(tmp_path, NUMBA_ENABLE_CUDASIM="1")
    assert pip["argv"][:2] == ["install", "-q"] and pip["argv"][2] == "-c"
    assert pip["argv"][4:] == [f"git+{REPOSITORY}@{BRANCH}"]
    # the versions the cell's own Python has (on the GPU machine a numpy put first on
    # this process's PYTHONPATH is not on the cell's)
    versions = subprocess.run(
        [sys.executable, "-c", "import numba, numpy; print(numpy.__version__, numba.__version__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path / "fake"))).stdout.split()
    assert pip["constraints"] == "numpy=={}\nnumba=={}\n".format(*versions)
    assert f"Installing git+{REPOSITORY}@{BRANCH} ..." in run.stdout
    # the stand-in installed nothing, so the cell's last line cannot import it
    assert "No module named 'kernels'" in run.stderr


def test_numba_cuda_of_another_version_is_replaced_by_the_books(tmp_path):
    _, pip = run_cell(tmp_path, numba_cuda="0.0.1", NUMBA_ENABLE_CUDASIM="1")
    assert pip["argv"][4:] == ["numba-cuda[cu12]==0.0.1", f"git+{REPOSITORY}@{BRANCH}"]


def test_failed_install_of_the_package_stops_with_a_plain_message(tmp_path):
    run, _ = run_cell(tmp_path, pip_exit=1, NUMBA_ENABLE_CUDASIM="1",
                      pip_says="ERROR: Could not resolve host: github.com (network unreachable)")
    assert "SetupError: The install failed, so the course cannot run here" in run.stderr
    assert "Could not resolve host" in run.stderr and "check the runtime's connection" in run.stderr
    assert "No module named" not in run.stderr  # stopped before a confusing import error


def test_failed_numba_cuda_install_goes_on_with_the_one_installed(tmp_path):
    run, pip = run_cell(tmp_path, pip_exit=1, numba_cuda="0.0.1", hide_checkout=False,
                        pip_says="ERROR: No matching distribution found", NUMBA_ENABLE_CUDASIM="1")
    assert pip["argv"][4:] == ["numba-cuda[cu12]==0.0.1"]
    assert run.returncode == 0, run.stderr
    assert f"Going on with numba-cuda {NUMBA_CUDA}, which this runtime already has" in run.stdout


@pytest.mark.skipif(not kernels.SIMULATOR, reason="this machine has a GPU")
def test_no_gpu_runtime_falls_back_to_the_simulator_for_real(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, "-c", first_cell.source(REPOSITORY, BRANCH, NUMBA_CUDA)
                          + "\nprint('SIMULATOR', kernels.SIMULATOR)"], cwd=tmp_path,
                         capture_output=True, text=True,
                         env=dict(env, PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stderr
    assert "already installed" in run.stdout
    assert "No GPU here: This runtime has no GPU." in run.stdout
    assert "Runtime > Change runtime type > T4 GPU" in run.stdout
    assert "SIMULATOR True" in run.stdout and "Traceback" not in run.stderr


@pytest.mark.skipif(not kernels.SIMULATOR, reason="this machine has a GPU")
def test_probe_reports_a_failed_launch_as_text_without_a_gpu():
    report = colab_setup.probe()
    assert not report.get("ok") and report["error"], report
    what, todo = colab_setup.diagnose(report["error"], colab_setup.driver_cuda_version())
    assert what == "This runtime has no GPU." and "T4 GPU" in todo


@pytest.mark.gpu
def test_probe_launches_a_kernel_on_the_gpu():
    report = colab_setup.probe()
    assert report.get("ok"), report
    assert report["linker"] in ("nvJitLink", "driver"), report


@pytest.fixture
def with_gpu(monkeypatch):
    """A runtime whose driver reports CUDA 12.4 and whose launch report is set by the test."""
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(colab_setup, "driver_cuda_version", lambda: "12.4")
    monkeypatch.setattr(colab_setup, "missing", lambda *args: [])

    def launch(report):
        monkeypatch.setattr(colab_setup, "probe", lambda: report)
        return colab_setup.setup(REPOSITORY, BRANCH, NUMBA_CUDA)
    yield launch
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def test_working_gpu_says_how_kernels_are_linked(with_gpu, capsys):
    assert with_gpu({"ok": True, "device": "Tesla T4", "linker": "nvJitLink"}) == "gpu"
    out = capsys.readouterr().out
    assert "Driver:    CUDA 12.4" in out and f"numba-cuda {NUMBA_CUDA}" in out
    assert "GPU:       Tesla T4" in out and "nvJitLink links each kernel into a cubin" in out
    assert "NUMBA_ENABLE_CUDASIM" not in os.environ


@pytest.mark.parametrize("error, what, todo", [
    (PTX_ERROR, "The GPU's driver (CUDA 12.4) is older than the compiler",
     'run `%pip install -U "nvidia-nvjitlink-cu12>=12.3,<13"`'),
    ("ModuleNotFoundError: No module named 'numba_cuda'", "The install did not take effect",
     "Runtime > Restart session, then Runtime > Run all"),
    ("CudaAPIError: [700] CUDA_ERROR_ILLEGAL_ADDRESS", "The first kernel launch failed",
     "Runtime > Disconnect and delete runtime"),
    ("CudaSupportError: Error at driver init: CUDA_ERROR_NO_DEVICE", "This runtime has no GPU.",
     "choose Runtime > Change runtime type > T4 GPU"),
])
def test_failed_launch_says_what_happened_and_falls_back(with_gpu, capsys, error, what, todo):
    assert with_gpu({"error": error}) == "simulator"
    out = capsys.readouterr().out
    assert f"No GPU here: {what}" in out and f"To use a GPU: {todo}" in out, out
    assert "sets NUMBA_ENABLE_CUDASIM=1" in out and os.environ["NUMBA_ENABLE_CUDASIM"] == "1"


def test_explicit_setting_wins(with_gpu, monkeypatch, capsys):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    assert with_gpu({"error": PTX_ERROR}) == "gpu"
    assert "NUMBA_ENABLE_CUDASIM=0 is set" in capsys.readouterr().out
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert with_gpu({"error": "never probed"}) == "simulator"
    assert "No GPU here (NUMBA_ENABLE_CUDASIM is set)" in capsys.readouterr().out


def test_linking_by_the_driver_says_the_driver_must_be_new_enough():
    assert "the driver must be as new as the toolchain's CUDA" in colab_setup.linking("driver")
    assert colab_setup.linking(None).startswith("not known")
