"""The copy of `kernels` that every worker imports: the package without its solutions.

The files are read into memory once, when grading starts, and written afresh into
each worker's private folder. So a notebook finds no ``kernels.solutions`` to import,
and one that rewrites the package's files (the checkers, say) changes only its own
copy: the next submission gets the files as they were when grading started.
"""

import pathlib

import kernels
from kernels import harness

EXCLUDED = ("solutions", "__pycache__")  # the answer key, and bytecode of this process


def files():
    """{path relative to the folder that holds `kernels`: bytes} of the package to copy."""
    root = pathlib.Path(kernels.__file__).resolve().parent
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not set(rel.parts) & set(EXCLUDED) and path.suffix != ".pyc":
            found[pathlib.PurePosixPath("kernels", *rel.parts)] = path.read_bytes()
    # In a checkout the recordings live with the book; the copy carries them as an
    # installed package does (kernels/recordings, where harness looks next).
    for path in sorted(pathlib.Path(harness.recording.BENCH_DIR).glob("*.json")):
        found.setdefault(pathlib.PurePosixPath("kernels", "recordings", path.name),
                         path.read_bytes())
    return found


def write(package_files, folder):
    """Write the package into `folder` (to go first on the worker's sys.path)."""
    folder = pathlib.Path(folder)
    for rel, data in package_files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder
