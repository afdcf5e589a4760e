"""Run generated notebooks top to bottom, as Colab would (the executor of notebooks.py).

With Jupyter: nbclient, one fresh kernel per notebook. Without (the lent GPU has no
Jupyter): the code cells run in order in one plain Python process, by the package's
plain executor (kernels/notebook_cells.py, which the grader uses too). Several notebooks
run in parallel, each in its own process (``notebooks.py --execute``).
"""

import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

CLI = pathlib.Path(__file__).with_name("notebooks.py")
KERNELS = pathlib.Path(__file__).resolve().parents[2] / "kernels"


def execute(path, out_dir, timeout=600):
    """Run one notebook top to bottom in a fresh kernel, as Colab would; save the result.

    The working directory is a scratch folder (on Colab it is /content, not the
    repository), so a chapter cannot lean on files beside it."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(scratch(path, out_dir))}})
    try:
        client.execute()
    finally:
        nbformat.write(nb, pathlib.Path(out_dir) / path.name)
    return nb


def execute_plain(path, out_dir):
    """Run the notebook's code cells in order in this process, without Jupyter.

    For machines that have no Jupyter (the lent GPU): the package's plain executor
    (kernels/notebook_cells.py) runs the notebook's code, set-up cell included, in one
    namespace as a kernel would; what each cell prints is saved as its output. It is
    strict, as nbclient is: an error stops the notebook unless its cell is tagged
    raises-exception."""
    import json

    cells = notebook_cells()
    nb = json.loads(path.read_text())
    os.chdir(scratch(path, out_dir))
    try:
        notes = cells.run(nb["cells"], {"__name__": "__main__"}, strict=True, keep_setup=True)
    finally:
        (pathlib.Path(out_dir) / path.name).write_text(json.dumps(nb, indent=1))
    for note in notes:
        print(f"{path.name}: {note}", file=sys.stderr)


def notebook_cells():
    """kernels/notebook_cells.py, loaded from its file: importing it from the package
    would import `kernels` first, which chooses GPU or simulator before the notebook's
    set-up cell can (the cell under test on a fresh runtime)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebook_cells", KERNELS / "notebook_cells.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scratch(path, out_dir):
    work = pathlib.Path(out_dir).resolve() / f"{path.stem}-cwd"
    work.mkdir(parents=True, exist_ok=True)
    return work


def execute_all(paths, out_dir, workers=None, timeout=600, plain=False):
    """Run notebooks in parallel, each in its own process; {path: (ok, log)}."""
    def one(path):
        proc = subprocess.run(
            [sys.executable, str(CLI), "--execute", str(path), "--out", str(out_dir),
             "--timeout", str(timeout)] + (["--plain"] if plain else []),
            capture_output=True, text=True)
        log = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)  # no colour codes
        return path, (proc.returncode == 0, log)

    with concurrent.futures.ThreadPoolExecutor(workers or os.cpu_count() or 2) as pool:
        return dict(pool.map(one, paths))
