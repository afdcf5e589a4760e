"""Generate the Colab notebooks: book/<chapter>.ipynb beside each chapter's .md.

    python book/_tools/notebooks.py            write every notebook (make notebooks)
    python book/_tools/notebooks.py --check    exit 1 if a committed one is out of date
    python book/_tools/notebooks.py --execute [NOTEBOOK ...] [--out DIR] [--plain]
                                               run notebooks top to bottom (nbclient;
                                               --plain: without Jupyter)

Every chapter in _toc.yml that is a MyST notebook gets one. The theme's Colab button
opens book/<chapter>.ipynb on GitHub at the branch set in _config.yml, because an
.ipynb of the same name sits beside the .md (_config.yml keeps the .ipynb files out
of the Sphinx build). A notebook is plain Jupyter.

The work is split by job: book_config.py reads the book's settings, myst_to_notebook.py
converts a chapter (its first cell: first_cell.py, whose code is colab_setup.py; its
glued numbers: glue_values.py, which runs the chapter once and keeps them in
book/_data/glue, and glue_text.py), run_notebooks.py executes notebooks; this module
writes and checks them and is the command line. Its names are the tools' public
interface (tests, student.py, the grader).
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
# the tools' public names, re-exported from where they live
from book_config import (ConversionError, book_settings, chapters,  # noqa: E402
                         numba_cuda_version, toc_files)
import glue_values  # noqa: E402
from myst_to_notebook import COLAB, MARKER, Converter  # noqa: E402
from run_notebooks import execute, execute_all, execute_plain, scratch  # noqa: E402

__all__ = ["ConversionError", "book_settings", "chapters", "numba_cuda_version", "toc_files",
           "COLAB", "MARKER", "Converter", "execute", "execute_all",
           "execute_plain", "scratch", "generated", "out_of_date", "write", "ROOT"]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def text_of(nb):
    import nbformat

    return nbformat.writes(nb) + "\n"


def generated(root, glue="fresh", glue_root=None):
    """{path of a generated notebook: its text} for the book at `root` (`glue`,
    `glue_root`: where the glued numbers come from, as Converter takes them)."""
    return {root / f"{name}.ipynb": text_of(nb)
            for name, nb in Converter(root, glue, glue_root).convert().items()}


def stray(root, wanted):
    """Generated notebooks whose chapter has left the toc."""
    import json

    found = []
    for path in (root / "book").rglob("*.ipynb"):
        if path not in wanted and ".ipynb_checkpoints" not in path.parts:
            if MARKER in json.loads(path.read_text()).get("metadata", {}):
                found.append(path)
    return found


def stray_stores(root):
    """Stores of glued numbers whose chapter glues none, or has left the toc."""
    wanted = {glue_values.store_path(root, name) for name in chapters(root)
              if glue_values.uses_glue((root / f"{name}.md").read_text())}
    return [p for p in sorted((root / glue_values.STORE).glob("*.json")) if p not in wanted]


def write(root):
    """Write every notebook; a chapter whose glued numbers are stale runs again first."""
    wanted = generated(root, glue="refresh")
    for path, text in wanted.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(root)}")
    for path in stray(root, wanted):
        path.unlink()
        print(f"removed {path.relative_to(root)} (its chapter is not in _toc.yml)")
    for path in stray_stores(root):
        path.unlink()
        print(f"removed {path.relative_to(root)} (its chapter glues no numbers)")


def out_of_date(root):
    """Paths (relative to root) of notebooks that are missing, stale or stray, and of
    stores of glued numbers that no longer match their chapter (with its notebook)."""
    stale = [name for name in chapters(root)
             if glue_values.uses_glue((root / f"{name}.md").read_text())
             and glue_values.is_stale(root, name)]
    wanted = generated(root, glue="stored")
    bad = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text
           or p.with_suffix("").relative_to(root).as_posix() in stale]
    stores = [glue_values.store_path(root, name) for name in stale]
    return [str(p.relative_to(root))
            for p in stores + bad + stray(root, wanted) + stray_stores(root)]


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=ROOT,
                        help="the book's root (holds _config.yml and _toc.yml)")
    parser.add_argument("--check", action="store_true", help="fail if a notebook is out of date")
    parser.add_argument("--execute", nargs="*", metavar="NOTEBOOK",
                        help="run notebooks (default: every chapter's) top to bottom")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("_build/notebooks"),
                        help="where --execute saves the executed notebooks")
    parser.add_argument("--timeout", type=int, default=600, help="per cell, in seconds")
    parser.add_argument("--plain", action="store_true",
                        help="run the code cells without Jupyter (where nbclient is missing)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.check:
        bad = out_of_date(root)
        for path in bad:
            print(f"out of date: {path}")
        if bad:
            print("Regenerate them with `make notebooks`.")
        return 1 if bad else 0
    if args.execute is not None:
        paths = [pathlib.Path(p).resolve() for p in args.execute] or [
            root / f"{name}.ipynb" for name in chapters(root)]
        args.out.mkdir(parents=True, exist_ok=True)
        if len(paths) == 1:
            if args.plain:
                execute_plain(paths[0], args.out.resolve())
            else:
                execute(paths[0], args.out, args.timeout)
            print(f"ran {paths[0].name}: every cell finished")
            return 0
        results = execute_all(paths, args.out, timeout=args.timeout, plain=args.plain)
        for path, (ok, log) in results.items():
            print(f"{'ok  ' if ok else 'FAIL'} {path.name}" + ("" if ok else f"\n{log[-3000:]}"))
        return 0 if all(ok for ok, _ in results.values()) else 1
    write(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
