"""Find the submitted notebooks, name them, read them, and tell which chapter each is."""

import collections
import dataclasses
import json
import pathlib
import re

from kernels.checks import registry

MAX_BYTES = 50 * 2**20  # a chapter notebook with its outputs is well under 5 MB
MARKER = "generated_from"  # notebook metadata naming the chapter (book/_tools/notebooks.py)
ACCEPTED = "notebooks (.ipynb) or folders of them"


class SubmissionError(ValueError):
    """A command-line argument that names no submission."""


class NotebookError(ValueError):
    """A submitted file the grader cannot run: the message goes into its feedback."""


@dataclasses.dataclass(frozen=True)
class Submission:
    name: str  # unique in one grading run, safe as a file name
    path: pathlib.Path


def collect(arguments):
    """The submissions named by command-line arguments: notebooks, or folders searched
    for notebooks. Each is named by its path (inside a folder argument, its folder
    parts joined by -), except that a notebook named for its chapter, the name every
    student's copy has (gridstride.ipynb, "Copy of gridstride.ipynb"), is named by the
    folder that holds it: class/alice/gridstride.ipynb is alice. Where two would have
    one name, they keep their file's name too (alice-gridstride, alice-atomics)."""
    found = []  # (name, fuller name, path)
    for argument in arguments:
        path = pathlib.Path(argument)
        if path.is_dir():
            notebooks = sorted(p for p in path.rglob("*.ipynb")
                               if ".ipynb_checkpoints" not in p.parts)
            if not notebooks:
                raise SubmissionError(f"{argument}: this folder holds no notebook (.ipynb); "
                                      f"the grader takes {ACCEPTED}")
            for p in notebooks:
                parts = p.relative_to(path).with_suffix("").parts
                if _named_for_a_chapter(p):
                    folder = parts[:-1] or (path.resolve().name,)
                    found.append(("-".join(folder), "-".join((*folder, p.stem)), p))
                else:
                    found.append(("-".join(parts),) * 2 + (p,))
        elif path.is_file():
            if path.suffix != ".ipynb":
                raise SubmissionError(f"{argument}: not a notebook (.ipynb); the grader "
                                      f"takes {ACCEPTED}")
            folder = path.resolve().parent.name
            if _named_for_a_chapter(path) and folder:
                found.append((folder, f"{folder}-{path.stem}", path))
            else:
                found.append((path.stem, path.stem, path))
        else:
            raise SubmissionError(f"{argument}: no such file or folder; the grader takes "
                                  f"{ACCEPTED}")
    shared = collections.Counter(name for name, _, _ in found)
    submissions, taken = [], set()
    for name, fuller, path in found:
        name = re.sub(r"[^\w.-]+", "_", fuller if shared[name] > 1 else name) or "notebook"
        unique, n = name, 1
        while unique in taken:
            n += 1
            unique = f"{name}-{n}"
        taken.add(unique)
        submissions.append(Submission(unique, path))
    return submissions


def _named_for_a_chapter(path):
    """Whether a notebook's file name is its chapter's, as the book names it (perhaps
    as Colab and browsers rename a copy): every student's has that name."""
    m = re.fullmatch(r"(?:copy of )?(.+?)(?: ?\(\d+\))?", path.stem.strip(), re.I)
    return m is not None and m[1].lower() in {ex.chapter for ex in registry.EXERCISES.values()}


def read(path):
    """The notebook at `path` as a dict, or NotebookError saying what is wrong with it."""
    path = pathlib.Path(path)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise NotebookError(f"the file is {size / 2**20:.0f} MB; a chapter notebook is a few "
                            f"MB at most, and the grader reads up to {MAX_BYTES // 2**20} MB")
    try:
        nb = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise NotebookError("the file is not text (UTF-8), so it is not a notebook. Download "
                            "it again from Colab: File > Download > Download .ipynb") from None
    except json.JSONDecodeError as err:
        raise NotebookError(f"the file is not a notebook: it is not valid JSON (line "
                            f"{err.lineno}, column {err.colno}: {err.msg}). Download it again "
                            "from Colab: File > Download > Download .ipynb") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("source", ""), (str, list)) for c in cells):
        raise NotebookError("the file is JSON but not a Jupyter notebook (version 4): it has "
                            "no list of cells, each with its source")
    return nb


def source(cell):
    text = cell.get("source", "")
    return text if isinstance(text, str) else "".join(str(line) for line in text)


def chapters(nb):
    """The chapters a notebook answers: the one its metadata names (a generated chapter
    notebook), else every chapter whose exercise functions or checkers its code names."""
    marker = (nb.get("metadata") or {}).get(MARKER)
    known = list(dict.fromkeys(ex.chapter for ex in registry.EXERCISES.values()))
    if isinstance(marker, str) and pathlib.PurePosixPath(marker).stem in known:
        return [pathlib.PurePosixPath(marker).stem]
    code = "\n".join(source(c) for c in nb["cells"] if c.get("cell_type") == "code")
    found = []
    for ex in registry.EXERCISES.values():
        name = re.escape(ex.names[0])
        if re.search(rf"^[ \t]*(def|class)[ \t]+{name}\b|^[ \t]*{name}[ \t]*=[^=]"
                     rf"|\bchecks\.{re.escape(ex.check_name)}\(", code, re.M):
            found.append(ex.chapter)
    return [c for c in known if c in found]
