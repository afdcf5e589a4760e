"""A fresh Google Colab runtime, emulated, and a notebook run in it as a student would.

The runtime: a virtual environment of Colab's Python with the packages Colab
preinstalls that matter here, at Colab's versions (tests/colab/colab-packages.txt),
and nothing of the course. The book's repository URL is redirected, in a private
git config, to a snapshot of the tree under test, so the first cell's
``pip install git+<repository>`` installs this code and nothing reaches GitHub.

A notebook runs there top to bottom under nbclient, first cell included, with three
probe cells added: before the first cell (numpy already in memory, as the strictest
case of a runtime's start-up), after it (what the install changed on disk and in
memory, where `kernels` came from) and at the end (still the same runtime: a restart
would have lost the student's place).

    python tests/colab_runtime.py NOTEBOOK RUNTIME OUT   run one notebook (the tests do)
"""

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import warnings

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGES = HERE / "colab" / "colab-packages.txt"
# Kept between runs and checkouts (CI clones afresh): the wheels pip fetched, and the
# pristine runtime built from them
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) \
    / "numba-cuda-course"
PROBE_TAG = "# colab-emulation probe"
PROBES = {
    "before": f"""{PROBE_TAG}: before the first cell
import importlib.metadata as _m, json as _j, os as _o
import numpy  # in memory before the install, so a change of numpy would show
_colab_probe = {{"pid": _o.getpid(), "disk": {{n: _m.version(n) for n in ("numpy", "numba")}}}}
print(_j.dumps(_colab_probe))""",
    "after": f"""{PROBE_TAG}: after the first cell
import sys as _s
_d = _m.distribution("numba-cuda-course-kernels")
print(_j.dumps({{"disk": {{n: _m.version(n) for n in ("numpy", "numba")}},
    "loaded": {{n: _s.modules[n].__version__ for n in ("numpy", "numba") if n in _s.modules}},
    "numba_cuda": _m.version("numba-cuda"), "kernels_from": _j.loads(_d.read_text("direct_url.json")),
    "simulator": kernels.SIMULATOR}}))""",
    "end": f"""{PROBE_TAG}: at the end
print(_j.dumps({{"same_runtime": "_colab_probe" in globals() and _colab_probe["pid"] == _o.getpid()}}))""",
}


def wanted_python():
    return re.search(r"^# python: (\S+)", PACKAGES.read_text(), re.M)[1]


def colab_python():
    """(interpreter, note): one of Colab's Python version where this machine has it
    ($COLAB_PYTHON, pythonX.Y on PATH, pyenv's versions), else this interpreter and a
    note that says so."""
    want = wanted_python()
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))
    candidates = [os.environ.get("COLAB_PYTHON"), shutil.which(f"python{want}")]
    candidates += sorted(str(p) for p in pyenv.glob(f"versions/{want}.*/bin/python{want}"))
    for candidate in filter(None, candidates):
        found = subprocess.run([candidate, "-c", "import sys, venv; print(sys.version)"],
                               capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.startswith(want + "."):
            return candidate, None
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    return sys.executable, (f"Colab's Python {want} is not on this machine (set $COLAB_PYTHON "
                            f"to one, or install it with pyenv): emulating with Python {here}")


def pip_env():
    """The environment pip runs in: the wheel cache kept between runs."""
    return dict(os.environ, PIP_CACHE_DIR=str(CACHE / "pip"), PIP_DISABLE_PIP_VERSION_CHECK="1",
                PYTHONPATH="")


def base_runtime(python):
    """Colab's packages in a virtual environment, built once per interpreter and
    packages file (under CACHE), never changed: each run gets a copy."""
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"],
                             capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256(PACKAGES.read_bytes() + python.encode() + version.encode()).hexdigest()
    base = CACHE / "colab" / f"runtime-{key[:12]}"
    if not (base / "ready").exists():
        building = base.with_name(f"{base.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(building)], check=True)
        pip = subprocess.run([str(building / "bin" / "python"), "-m", "pip", "install", "-q",
                              "-r", str(PACKAGES)], capture_output=True, text=True, env=pip_env())
        if pip.returncode != 0:
            raise RuntimeError(f"installing Colab's packages failed (is PyPI reachable?):\n"
                               f"{pip.stderr[-3000:]}")
        (building / "ready").touch()
        if not (base / "ready").exists():  # another run may have finished first
            shutil.rmtree(base, ignore_errors=True)
            building.rename(base)
        else:
            shutil.rmtree(building)
    return base


def fresh_runtime(dest, python):
    """A new runtime at `dest`: hard links to the pristine one (pip unlinks a file
    before it writes one, so installing into the copy leaves the original as it is)."""
    subprocess.run(["cp", "-al", str(base_runtime(python)), str(dest)], check=True)
    return dest


def snapshot(tree, dest, branch):
    """The files of `tree` as they are now (in a git checkout: tracked and untracked,
    less what git ignores), committed on `branch` of a new repository at `dest`."""
    if (tree / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=tree,
                                capture_output=True, text=True, check=True).stdout
        files = [f for f in listed.split("\0") if f and (tree / f).is_file()]
    else:
        files = [str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()]
    for name in files:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / name, dest / name)
    git = ["git", "-c", "user.name=colab-emulation", "-c", "user.email=colab@localhost"]
    subprocess.run(["git", "init", "-q", "-b", branch, str(dest)], check=True)
    subprocess.run(git + ["add", "-A"], cwd=dest, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "snapshot under test"], cwd=dest, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True,
                          check=True).stdout.strip()


def redirect(git_config, repository, local):
    """A private git config that sends `repository` to the local repository."""
    git_config.write_text(f'[url "file://{local}"]\n\tinsteadOf = {repository}\n')


def kernel_env(runtime, git_config, home):
    """What the notebook's kernel sees: a clean environment as on Colab, no PYTHONPATH,
    no simulator setting (the first cell decides), git through the private config."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "PIP_CERT", "PIP_FIND_LINKS", "PIP_INDEX_URL",
            "PIP_EXTRA_INDEX_URL", "PIP_DEFAULT_TIMEOUT", "SSL_CERT_FILE")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    pip_config = pathlib.Path.home() / ".config" / "pip" / "pip.conf"
    if pip_config.exists():  # this machine's way to the package index
        env["PIP_CONFIG_FILE"] = str(pip_config)
    env.update(PATH=f"{runtime / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(home),
               GIT_CONFIG_GLOBAL=str(git_config), GIT_CONFIG_NOSYSTEM="1",
               PIP_CACHE_DIR=str(CACHE / "pip"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               MPLBACKEND="agg")
    return env


def run(notebook, runtime, out, env, timeout=600):
    """Run `notebook` in `runtime` with nbclient, probes added; write it to out."""
    import nbclient
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    probe = {k: nbformat.v4.new_code_cell(v) for k, v in PROBES.items()}
    nb.cells = [probe["before"], nb.cells[0], probe["after"], *nb.cells[1:], probe["end"]]
    specs = out / f"{notebook.stem}-jupyter" / "kernels" / "colab"
    specs.mkdir(parents=True)
    (specs / "kernel.json").write_text(json.dumps({
        "argv": [str(runtime / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"], "display_name": "Colab (emulated)", "language": "python"}))
    os.environ["JUPYTER_PATH"] = str(specs.parent.parent)
    work = out / f"{notebook.stem}-content"  # Colab's /content: not the repository
    work.mkdir()
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="colab",
                                     resources={"metadata": {"path": str(work)}})
    try:
        client.execute(env=env)
    finally:
        nbformat.write(nb, out / notebook.name)


def probes(executed):
    """{before, first cell, after, end}: what the probes and the first cell printed."""
    def text(cell):
        return "".join("".join(o["text"]) for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream")

    cells = executed["cells"]
    found = {"first_cell": text(cells[1])}
    for name, cell in (("before", cells[0]), ("after", cells[2]), ("end", cells[-1])):
        assert "".join(cell["source"]).startswith(PROBE_TAG), name
        found[name] = json.loads(text(cell).strip().split("\n")[-1])
    return found


def prepare(tmp, tree, repository, branch):
    """What every run of one edition shares: the snapshot of `tree` that `repository`
    is redirected to (private git config: tmp/gitconfig), a home; the snapshot's commit."""
    python, note = colab_python()
    if note:
        warnings.warn(note)
    base_runtime(python)
    commit = snapshot(tree, tmp / "repository", branch)
    redirect(tmp / "gitconfig", repository, tmp / "repository")
    (tmp / "home").mkdir()
    return commit


if __name__ == "__main__":
    notebook, runtime, out = (pathlib.Path(a).resolve() for a in sys.argv[1:4])
    out.mkdir(parents=True, exist_ok=True)
    run(notebook, runtime, out, json.loads(os.environ.pop("COLAB_KERNEL_ENV")))
