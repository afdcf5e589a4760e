"""kernels.grading.package: the solution-free copy of the package the student's
processes import, with bytecode that is checked against its source."""

import os
import subprocess
import sys

from kernels.grading import package


def test_the_copy_has_no_solutions_and_no_bytecode_of_this_process():
    files = package.files()
    names = {str(rel) for rel in files}
    assert "kernels/checks/core.py" in names and "kernels/__init__.py" in names
    assert not any("solutions" in n or n.endswith(".pyc") for n in names)


def _import(folder, code):
    env = dict(os.environ, PYTHONPATH=str(folder), PYTHONDONTWRITEBYTECODE="1",
               NUMBA_ENABLE_CUDASIM="1")
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True, check=True).stdout


def test_each_module_comes_with_bytecode_that_a_rewritten_source_overrides(tmp_path):
    files = package.with_bytecode(package.files())
    assert files.keys() > package.files().keys()
    package.write(files, tmp_path)
    cached = tmp_path / "kernels" / "checks" / "__pycache__"
    assert any(p.name.startswith("points.") for p in cached.iterdir())
    said = _import(tmp_path, "import kernels.checks.points as p; print(p.__cached__); "
                             "print(p.TAMPERED if hasattr(p, 'TAMPERED') else 'as written')")
    assert said.splitlines() == [str(next(cached.glob("points.*.pyc"))), "as written"]
    source = tmp_path / "kernels" / "checks" / "points.py"  # where the copy is writable
    source.write_text(source.read_text() + "\nTAMPERED = 'the source as it is now'\n")
    said = _import(tmp_path, "import kernels.checks.points as p; print(p.TAMPERED)")
    assert said.strip() == "the source as it is now"
