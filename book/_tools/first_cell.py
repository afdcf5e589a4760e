"""The first cell of every generated notebook: colab_setup.py's code, then its call.

The cell is that module's source as it is (tested there), without its docstring,
followed by the book's settings and ``setup(...)``; then ``import kernels``, which
decides GPU or simulator once. Colab shows the cell as a titled form, code folded.
"""

import ast
import pathlib

SOURCE = pathlib.Path(__file__).with_name("colab_setup.py")
TITLE = "# @title Set-up: run this cell first (it installs what is missing and checks the GPU)"
HEADER = """\
# On a fresh Google Colab runtime this installs numba-cuda for Colab's CUDA 12 driver
# and the course's `kernels` package from the book's repository, keeping Colab's numpy
# and numba; anywhere else it only checks. Then it launches one small kernel to see
# whether the GPU works, and falls back to the Numba CUDA simulator, saying why and
# what to do, if it does not. It downloads nothing else."""
METADATA = {"cellView": "form"}  # Colab: show the title, fold the code


def source(repository, branch, numba_cuda):
    code = SOURCE.read_text()
    docstring = ast.parse(code).body[0]
    body = "\n".join(code.split("\n")[docstring.end_lineno:]).strip("\n")
    return (f"{TITLE}\n{HEADER}\n{body}\n\n\n"
            f'REPOSITORY = "{repository}"  # the book\'s repository (_config.yml)\n'
            f'BRANCH = "{branch}"\n'
            f'NUMBA_CUDA = "{numba_cuda}"  # the version the book is tested with\n'
            "setup(REPOSITORY, BRANCH, NUMBA_CUDA)\n"
            "import kernels  # decides GPU or simulator, once, before numba.cuda is imported")
