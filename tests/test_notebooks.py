"""The Colab notebooks: generated from the chapters, up to date, plain Jupyter, runnable.

On a GPU machine the execution tests run the notebooks on the GPU (without Jupyter
there, the code cells run in a plain Python process):
    python -m pytest -q tests/test_notebooks.py -k runs_top_to_bottom
"""

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import kernels

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import glue_text  # noqa: E402
import notebooks  # noqa: E402

CHAPTERS = notebooks.chapters(ROOT)
# On the simulator the book build already executes every chapter's cells (the same
# code, tested below) and tests/test_colab.py runs three notebooks whole on an
# emulated Colab; `make test` runs one notebook here, `make colab` (or a GPU) all.
EXECUTE_ALL = os.environ.get("COLAB_CHAPTERS") == "all" or not kernels.SIMULATOR
EXECUTED = set(CHAPTERS) if EXECUTE_ALL else {"book/setup"}
OWNER, REPO, BRANCH = notebooks.book_settings(ROOT)
MYST_LEFT = [re.compile(p) for p in (r"^\s*(`{3,}|~{3,}|:{3,})\s*\{", r"\{[a-z][\w:-]*\}`",
                                     r"^\(\S+\)=\s*$", r"^%", "literalinclude")]


def load(name):
    return json.loads((ROOT / f"{name}.ipynb").read_text())


def source(cell):
    return "".join(cell["source"])


def test_every_notebook_chapter_is_found():
    assert {"book/setup", "book/gridstride"} <= set(CHAPTERS)
    assert "book/intro" not in CHAPTERS  # plain Markdown page, not a notebook


@pytest.mark.needs("jupytext", "nbformat")
def test_committed_notebooks_are_up_to_date():
    stale = notebooks.out_of_date(ROOT)
    assert not stale, f"out of date: {stale}; regenerate them with `make notebooks`"


@pytest.mark.needs("nbformat")
@pytest.mark.parametrize("name", CHAPTERS)
def test_notebook_is_plain_jupyter_for_colab(name):
    import nbformat

    nb = nbformat.read(ROOT / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["accelerator"] == "GPU"
    assert nb.metadata["colab"]["gpuType"] == "T4"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            lines = cell.source.split("\n")
            fences = [ln for ln in lines if re.match(r"^\s*(`{3,}|~{3,})", ln)]
            for pattern in MYST_LEFT:
                left = [ln for ln in lines if pattern.search(ln)]
                assert not left, f"{name}: MyST syntax left for Colab: {left}"
            assert len(fences) % 2 == 0, f"{name}: unbalanced code fence"
        assert not cell.get("outputs"), f"{name}: a committed notebook carries outputs"


@pytest.mark.parametrize("name", CHAPTERS)
def test_only_the_first_cell_downloads(name):
    """The first cell sets up the runtime (tests/test_first_cell.py); no later one downloads."""
    for cell in load(name)["cells"][1:]:
        if cell["cell_type"] == "code":
            code = source(cell)
            assert not re.search(r"^\s*[!%]", code, re.M), f"{name}: a shell escape or magic"
            for download in ("pip install", "urllib", "requests.", "wget", "curl", "git clone"):
                assert download not in code, f"{name}: a later cell downloads ({download!r})"


def test_notebooks_show_the_kernel_source_the_book_shows():
    for name in CHAPTERS:
        md = (ROOT / f"{name}.md").read_text()
        text = "\n".join(source(c) for c in load(name)["cells"] if c["cell_type"] == "markdown")
        for obj in re.findall(r":pyobject:\s*(\S+)", md):
            function = obj.rsplit(".", 1)[-1]
            assert re.search(rf"^\s*(def|class) {function}\b", text, re.M), (name, obj)


@pytest.mark.parametrize("name", CHAPTERS)
def test_exercises_become_quotes_and_solutions_collapsed_details(name):
    text = "\n".join(source(c) for c in load(name)["cells"] if c["cell_type"] == "markdown")
    md = (ROOT / f"{name}.md").read_text()
    n_exercises = len(re.findall(r"^`{3,}\{exercise\}", md, re.M))
    n_solutions = len(re.findall(r"^`{3,}\{solution\}", md, re.M))
    assert len(re.findall(r"^> \*\*Exercise \d+", text, re.M)) == n_exercises
    assert text.count("<details>\n<summary><b>Solution to Exercise") == n_solutions
    assert text.count("<details>") == text.count("</details>")


# ------------------------------------------------------------------ the converter


def make_book(tmp_path, chapters):
    """A tiny book at tmp_path with the given {name: MyST text} chapters."""
    (tmp_path / "book").mkdir()
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "demo.py").write_text(
        "import math\n\n\ndef helper(x):\n    return x\n\n\n@decorator\n"
        "def shown_kernel(a):\n    a[0] = 1  # the line readers see\n")
    (tmp_path / "_config.yml").write_text(
        "title: t\nrepository:\n  url: https://github.com/someone/course\n  branch: v2\n")
    (tmp_path / "requirements.txt").write_text("numba-cuda[cu13]==9.9.1\n")
    front = "---\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n"
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    for name, text in chapters.items():
        (tmp_path / "book" / f"{name}.md").write_text(front + text)
        toc += f"- file: book/{name}\n"
    (tmp_path / "_toc.yml").write_text(toc)
    return tmp_path


CHAPTER_A = """\
# Chapter A

(a-idea)=
## The idea

![a figure](figures/a.png) and {math}`x^2`, see {doc}`b`, {ref}`b-section`,
{ref}`a-ex-first` and {glue:text}`speed:.1f` GB/s.

```{code-cell} ipython3
from myst_nb import glue
glue("speed", 12.25, display=False)
```

```{literalinclude} ../kernels/demo.py
:pyobject: shown_kernel
```

:::{warning} Mind the tail
Text with `code`.
:::

````{exercise} Do it (easy)
:label: a-ex-first

Write it.
````

````{solution} a-ex-first
:class: dropdown

Explained.

```{literalinclude} ../kernels/demo.py
:pyobject: helper
```
````

```{figure} figures/b.png
:name: a-fig

The caption.
```
"""

CHAPTER_B = """\
# Chapter B

(b-section)=
## Section of B

Back to {ref}`the idea <a-idea>` and {ref}`a-ex-first`.
"""


@pytest.mark.needs("jupytext", "nbformat")
def test_converter_turns_myst_into_markdown_colab_renders(tmp_path):
    root = make_book(tmp_path, {"a": CHAPTER_A, "b": CHAPTER_B})
    nbs = notebooks.Converter(root, glue="refresh").convert()
    assert list(nbs) == ["book/a", "book/b"]
    a = nbs["book/a"]
    md = "\n".join(c.source for c in a.cells if c.cell_type == "markdown")
    colab_b = "https://colab.research.google.com/github/someone/course/blob/v2/book/b.ipynb"
    assert "![a figure](https://raw.githubusercontent.com/someone/course/v2/book/figures/a.png)" in md
    assert "$x^2$" in md and f"[Chapter B]({colab_b})" in md
    assert f"[Section of B]({colab_b})" in md and "Exercise 1 and 12.2 GB/s" in md
    assert "@decorator\ndef shown_kernel(a):\n    a[0] = 1  # the line readers see\n```" in md
    assert "> **Mind the tail**\n>\n> Text with `code`." in md
    assert "> **Exercise 1 \u00b7 Do it (easy)** `a-ex-first`\n>\n> Write it." in md
    assert ("<details>\n<summary><b>Solution to Exercise 1</b> \u00b7 Do it (easy)</summary>\n\n"
            "Explained.\n\n```python\ndef helper(x):\n    return x\n```\n\n</details>") in md
    assert "![](https://raw.githubusercontent.com/someone/course/v2/book/figures/b.png)" in md
    assert "*The caption.*" in md and "(a-idea)=" not in md
    code = [c.source for c in a.cells if c.cell_type == "code"]
    assert 'REPOSITORY = "https://github.com/someone/course"' in code[0]
    assert 'BRANCH = "v2"' in code[0] and 'NUMBA_CUDA = "9.9.1"' in code[0]
    assert "myst_nb" not in code[1].split('"""')[0] and "def glue(" in code[1]
    b = "\n".join(c.source for c in nbs["book/b"].cells if c.cell_type == "markdown")
    colab_a = colab_b.replace("b.ipynb", "a.ipynb")
    assert f"[the idea]({colab_a})" in b and f"[Exercise 1]({colab_a})" in b


@pytest.mark.needs("jupytext", "nbformat")
def test_glued_numbers_come_from_a_store_that_follows_the_code(tmp_path, capsys):
    """The chapter's code cells run once (simulator) for the numbers its text quotes;
    the store is stale when a code cell changes, and the notebook with it."""
    root = make_book(tmp_path, {"a": CHAPTER_A, "b": CHAPTER_B})
    with pytest.raises(notebooks.ConversionError, match="glue/a.json is missing"):
        notebooks.Converter(root).convert()
    assert notebooks.out_of_date(root) == ["book/_data/glue/a.json", "book/a.ipynb",
                                           "book/b.ipynb"]
    notebooks.write(root)
    store = json.loads((root / "book/_data/glue/a.json").read_text())
    assert store["values"] == {"speed": 12.25} and store["recorded"] == {"speed": []}
    assert notebooks.out_of_date(root) == []
    chapter = root / "book" / "a.md"
    chapter.write_text(chapter.read_text().replace("12.25", "30.0"))
    assert notebooks.out_of_date(root) == ["book/_data/glue/a.json", "book/a.ipynb"]
    notebooks.write(root)
    md = "\n".join(source(c) for c in json.loads((root / "book/a.ipynb").read_text())["cells"]
                   if c["cell_type"] == "markdown")
    assert "Exercise 1 and 30.0 GB/s" in md and "speed" not in md
    chapter.write_text(chapter.read_text().replace("{glue:text}`speed:.1f`", "30"))
    assert notebooks.out_of_date(root) == ["book/a.ipynb", "book/_data/glue/a.json"]
    notebooks.write(root)
    assert notebooks.out_of_date(root) == [] and not (root / "book/_data/glue/a.json").exists()


def test_glue_stand_in_prints_the_books_sentences_with_this_runs_numbers(capsys):
    glued = glue_text.Glued("book/a", {
        "values": {"ms": "0.091", "pct": 85.25, "lanes": "32"},
        "recorded": {"ms": [["NVIDIA X", "2026-01-02"]], "pct": [["NVIDIA X", "2026-01-05"]],
                     "lanes": []},
        "order": ["lanes", "pct", "ms"]})
    text = "# T\n\nIt takes " + glued.role("ms") + " ms, " + glued.role("pct:.0f") + \
        "% of the *copy* bandwidth. Each warp has " + glued.role("lanes") + " lanes."
    filled = glued.fill(text)
    assert filled.startswith("# T\n\nIt takes 0.091 ms, 85% of the *copy* bandwidth. Each "
                             "warp has 32 lanes.\n\n*The numbers above were recorded on "
                             "NVIDIA X, 2026-01-02 and 2026-01-05")
    namespace = {}
    exec(glued.cell_code(), namespace)
    glue = namespace["glue"]
    glue("pct", 91.0, display=False)  # not yet: the sentence's last value is "ms"
    assert capsys.readouterr().out == ""
    glue("ms", "0.080", display=False)
    glue("lanes", "32", display=False)
    # recorded numbers: on the simulator, the benchmark cells return the recording
    whose = "Recorded (no GPU here)" if kernels.SIMULATOR else "Measured on this GPU"
    assert capsys.readouterr().out == (
        f"{whose}: It takes 0.080 ms, 91% of the copy bandwidth.\n"
        "This run: Each warp has 32 lanes.\n")


def test_no_notebook_text_holds_a_glue_role_or_name():
    import glue_values

    fenced = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.M | re.S)
    for name in CHAPTERS:
        text = "\n".join(source(c) for c in load(name)["cells"] if c["cell_type"] == "markdown")
        assert "{glue" not in text, name
        prose = fenced.sub("", text)  # listings may name a value's field
        chapter = re.sub(r"\{glue:text\}`[^`]*`", "", (ROOT / f"{name}.md").read_text())
        store = glue_values.stored(ROOT, name) or {"values": {}}
        for key in store["values"]:
            if f"`{key}`" not in chapter:  # the chapter's own prose may quote the name
                assert f"`{key}`" not in prose, (name, key)
                if "_" in key:
                    assert not re.search(rf"(?<![\w`-]){re.escape(key)}(?![\w`-])", prose), \
                        (name, key)
        if store["values"]:
            assert "*The numbers above were recorded on " in text, name


@pytest.mark.parametrize("text, complaint", [
    ("```{bibliography}\n```\n", "{bibliography} has no notebook form"),
    ("See {cite}`knuth`.\n", "role {cite} has no notebook form"),
    ("```{solution-start} x\n```\n", "gated exercises/solutions are not supported"),
    ("```{solution} nowhere\nx\n```\n", "no exercise with that label"),
    ("See {ref}`missing-label`.\n", "no such label"),
    ("```{literalinclude} ../kernels/demo.py\n:pyobject: absent\n```\n", "absent"),
])
@pytest.mark.needs("jupytext", "nbformat")
def test_unknown_myst_is_an_error_that_says_what_to_do(tmp_path, text, complaint):
    root = make_book(tmp_path, {"a": "# A\n\n" + text})
    with pytest.raises(notebooks.ConversionError, match=re.escape(complaint)):
        notebooks.Converter(root).convert()


def test_repository_must_be_on_github(tmp_path):
    root = make_book(tmp_path, {"a": "# A\n"})
    (root / "_config.yml").write_text("repository:\n  url: https://gitlab.com/x/y\n")
    with pytest.raises(notebooks.ConversionError, match="GitHub"):
        notebooks.Converter(root).convert()


@pytest.mark.needs("jupytext", "nbformat")
def test_write_then_check_and_stray_notebooks_removed(tmp_path, capsys):
    root = make_book(tmp_path, {"a": "# A\n"})
    assert notebooks.out_of_date(root) == ["book/a.ipynb"]
    notebooks.write(root)
    assert notebooks.out_of_date(root) == []
    (root / "book" / "a.md").write_text((root / "book" / "a.md").read_text() + "\nMore.\n")
    assert notebooks.out_of_date(root) == ["book/a.ipynb"]
    notebooks.write(root)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    assert notebooks.out_of_date(root) == ["book/a.ipynb"]  # stray: chapter left the toc
    notebooks.write(root)
    assert not (root / "book" / "a.ipynb").exists()


# ------------------------------------------------------------------ the book's buttons


@pytest.mark.book
def test_colab_button_of_every_chapter_opens_its_notebook(built_book):
    for name in CHAPTERS:
        html = (built_book / f"{name}.html").read_text()
        links = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
        assert links == [f"{notebooks.COLAB}/{OWNER}/{REPO}/blob/{BRANCH}/{name}.ipynb"], name
        path = links[0].split(f"/blob/{BRANCH}/", 1)[1]
        assert (ROOT / path).is_file(), f"{name}: the Colab button opens {path}, which is missing"
        # where this checkout has the configured branch, the notebook is committed there
        branch = subprocess.run(["git", "rev-parse", "--verify", "-q", BRANCH], cwd=ROOT,
                                capture_output=True)
        if branch.returncode == 0:
            committed = subprocess.run(["git", "cat-file", "-e", f"{BRANCH}:{path}"], cwd=ROOT)
            assert committed.returncode == 0, f"{path} is not committed on {BRANCH}"


# ------------------------------------------------------------------ running them


# Without Jupyter (the lent GPU has none) the notebooks' code cells run in a plain
# Python process (notebooks.py --plain); cells that need IPython are then skipped.
PLAIN = not all(importlib.util.find_spec(m) for m in ("nbclient", "ipykernel"))


def needs_missing_ipython(name):
    code = "\n".join(source(c) for c in load(name)["cells"] if c["cell_type"] == "code")
    return (PLAIN and not importlib.util.find_spec("IPython")
            and re.search(r"^(from|import) IPython\b", code, re.M))


@pytest.fixture(scope="session")
def executed(request, tmp_path_factory):
    """The selected notebooks run top to bottom, in parallel, each in a fresh process."""
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.originalname == "test_notebook_runs_top_to_bottom"}
    out = tmp_path_factory.mktemp("notebooks")
    env = {"NUMBA_ENABLE_CUDASIM": "1" if kernels.SIMULATOR else "0", "MPLBACKEND": "Agg",
           # the kernel finds this checkout's `kernels`, as Colab finds the installed one
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runnable = [n for n in CHAPTERS if n in selected and n in EXECUTED
                and (ROOT / f"{n}.ipynb").exists() and not needs_missing_ipython(n)]
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        # on a GPU the chapters run their benchmarks live: fewer at once, so that
        # the checkers' time limits are not eaten by the other notebooks' benchmarks
        results = notebooks.execute_all([ROOT / f"{n}.ipynb" for n in runnable], out,
                                        workers=None if kernels.SIMULATOR else 4, plain=PLAIN)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return out, results


@pytest.mark.book
@pytest.mark.parametrize("name", CHAPTERS)
def test_notebook_runs_top_to_bottom(executed, name):
    if name not in EXECUTED:
        pytest.skip("the book build executes its cells; `make colab` runs the notebook")
    out, results = executed
    assert (ROOT / f"{name}.ipynb").exists(), f"{name}.ipynb is missing: run `make notebooks`"
    if needs_missing_ipython(name):
        pytest.skip(f"{name} uses IPython, which this machine lacks (no Jupyter here)")
    ok, log = results[ROOT / f"{name}.ipynb"]
    assert ok, f"{name}.ipynb failed:\n{log[-4000:]}"
    nb = json.loads((out / f"{pathlib.Path(name).name}.ipynb").read_text())
    setup = "".join("".join(o.get("text", "")) for o in nb["cells"][0]["outputs"])
    assert "already installed" in setup and "Installing" not in setup, setup
    if kernels.SIMULATOR:
        assert "No GPU here (NUMBA_ENABLE_CUDASIM is set)" in setup
        assert "Runtime > Change runtime type > T4 GPU" in setup
    else:
        assert "No GPU here" not in setup and "GPU" in setup


@pytest.mark.parametrize("fails", [False, True])
def test_plain_executor_runs_the_set_up_cell_first_and_stops_at_an_error(tmp_path, fails):
    """Without Jupyter, the package's executor runs a notebook as nbclient would: the
    set-up cell as written, before anything has imported `kernels` (it chooses GPU or
    simulator itself); an error its cell expects is shown; any other fails the run."""
    from kernels.notebook_cells import SETUP_PREFIX
    from planted import code_cell

    cells = [code_cell(SETUP_PREFIX + "\nimport sys\nprint('kernels', 'kernels' in sys.modules)"),
             code_cell("raise ValueError('bad size')", tags=["raises-exception"]),
             code_cell("1 / 0" if fails else "x = 1"), code_cell("print('last')")]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    ok, log = notebooks.execute_all([path], tmp_path / "out", plain=True)[path]
    assert ok is not fails, log
    assert ("code cell 3 (`1 / 0`) raised ZeroDivisionError: division by zero" in log) is fails
    nb = json.loads((tmp_path / "out" / "nb.ipynb").read_text())
    outputs = ["".join(o["text"] for o in c["outputs"]) for c in nb["cells"]]
    assert outputs == ["kernels False\n", "ValueError: bad size\n", "",
                       "" if fails else "last\n"]


def test_installed_package_finds_the_recordings(tmp_path):
    """Colab pip-installs `kernels` from the repository; the simulator fallback plots
    the recorded timings, so they must come with the installed package."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "kernels", src / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "book" / "_data" / "bench", src / "book" / "_data" / "bench")
    shutil.copy2(ROOT / "pyproject.toml", src)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "wheel"), str(src)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next((tmp_path / "wheel").glob("*.whl"))
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    probe = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
             "if 'editable' not in repr(f)]\n"  # not this checkout's editable install
             "from kernels import harness\n"
             "print(harness.recorded('gridstride.vector_add').caption)")
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                         text=True, env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
                                             PYTHONPATH=str(tmp_path / "site")))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "recorded 20" in run.stdout and "STALE" not in run.stdout, run.stdout
