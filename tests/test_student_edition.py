"""The student edition: the book and notebooks with no solution left, nothing else lost."""

import ast
import html
import json
import os
import pathlib
import re
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import myst  # noqa: E402
import notebooks  # noqa: E402
import student  # noqa: E402

CHAPTERS = notebooks.chapters(ROOT)


def normal(text):
    """Text as it reads, whatever the markup: no backticks, stars or underscores, one space."""
    return " ".join(re.sub(r"[`*_]", "", text).split())


def directive_bodies(text, name):
    for block in myst.split(text):
        if isinstance(block, myst.Fence) and block.name is not None:
            if block.name == name:
                yield block
            else:
                yield from directive_bodies(block.options_and_content()[1], name)


def fingerprints():
    """Lines only a solution contains: the code it shows (kernels/solutions) and its prose."""
    kept = []  # what readers see outside solutions: kernels, checkers, chapter code, exercises
    for path in (ROOT / "kernels").rglob("*.py"):
        if "solutions" not in path.parts:
            kept.append(path.read_text())
    prints = set()
    for name in CHAPTERS:
        md = (ROOT / f"{name}.md").read_text()
        kept += ["\n".join(b.body) for b in directive_bodies(md, "code-cell")]
        kept += ["\n".join(b.body) for b in directive_bodies(md, "exercise")]
        for solution in directive_bodies(md, "solution"):
            _, content = solution.options_and_content()
            prose = [b for b in myst.split(content) if isinstance(b, str)]
            prints |= {normal(p) for p in re.split(r"\n\s*\n", "\n".join(prose)) if p.strip()}
            for shown in directive_bodies(content, "literalinclude"):
                options, _ = shown.options_and_content()
                source = (ROOT / name).parent.joinpath(shown.arg).resolve().read_text()
                for node in ast.walk(ast.parse(source)):
                    if getattr(node, "name", None) == options.get("pyobject"):
                        segment = ast.get_source_segment(source, node)
                        prints |= {normal(line) for line in segment.splitlines()}
    kept = normal("\n".join(kept))
    return sorted(p for p in prints if len(p) >= 12 and p not in kept)


FINGERPRINTS = fingerprints()
TITLE = "Solution to Exercise"


def leaks(text):
    flat = normal(text)
    return [p for p in FINGERPRINTS if p in flat] + ([TITLE] if TITLE in text else [])


def html_text(path):
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def test_there_are_solutions_to_look_for():
    assert len(FINGERPRINTS) >= 10, FINGERPRINTS
    # the instructors' notebooks show every one of them
    text = ""
    for name in CHAPTERS:
        nb = json.loads((ROOT / f"{name}.ipynb").read_text())
        text += "\n".join("".join(c["source"]) for c in nb["cells"])
    flat = normal(text)
    missing = [p for p in FINGERPRINTS if p not in flat]
    assert not missing, missing


def test_strip_removes_solutions_and_keeps_everything_else():
    text = """\
# T

````{exercise} E
:label: ex-1

Do it.
````

````{solution} ex-1
:class: dropdown

Secret prose.

```{literalinclude} ../kernels/solutions/t.py
:pyobject: f
```
````

```{code-cell} ipython3
from kernels import checks, solutions
print(checks.t(solutions.t.f))
```

```{code-cell} ipython3
print(checks.t(my_f))
```

::::{tab-set}
:::{tab-item} A
Kept.
```{solution} ex-1
Nested secret.
```
:::
::::
"""
    out = student.strip(text)
    assert "Secret" not in out and "secret" not in out and "solutions" not in out
    assert "{solution}" not in out
    for kept in ("````{exercise} E\n:label: ex-1\n\nDo it.\n````",
                 "```{code-cell} ipython3\nprint(checks.t(my_f))\n```",
                 ":::{tab-item} A\nKept.", "::::{tab-set}"):
        assert kept in out


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    return student.build(out, html=False)


@pytest.mark.needs("jupytext", "nbformat")
def test_student_sources_and_notebooks_have_no_solutions(sources):
    for name in CHAPTERS:
        md = (sources / f"{name}.md").read_text()
        assert "{solution}" not in md and "kernels/solutions" not in md, name
        assert not leaks(md), (name, leaks(md))
        nb = (sources / f"{name}.ipynb").read_text()
        assert not leaks(nb), (name, leaks(nb))


@pytest.mark.needs("jupytext", "nbformat")
def test_student_edition_keeps_exercises_and_checker_cells(sources):
    for name in CHAPTERS:
        full, cut = (ROOT / f"{name}.md").read_text(), (sources / f"{name}.md").read_text()
        assert (len(list(directive_bodies(cut, "exercise")))
                == len(list(directive_bodies(full, "exercise")))), name
        cells = [c.raw for c in directive_bodies(full, "code-cell")]
        kept = [c for c in cells if not student.USES_SOLUTIONS.search(c)]
        assert [c.raw for c in directive_bodies(cut, "code-cell")] == kept, name
        checker_calls = re.findall(r"checks\.\w+\(", full)
        assert all(call in cut for call in checker_calls), name
    for path in (ROOT / "kernels").rglob("*.py"):
        rel = path.relative_to(ROOT)
        if "solutions" not in rel.parts:
            assert (sources / rel).read_text() == path.read_text(), rel


@pytest.mark.needs("jupytext", "nbformat")
def test_student_package_has_no_solutions_and_installs(sources, tmp_path):
    assert not (sources / "kernels" / "solutions").exists()
    assert "kernels.solutions" not in (sources / "pyproject.toml").read_text()
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           "--no-build-isolation", "-w", str(tmp_path), str(sources)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(next(tmp_path.glob("*.whl"))) as wheel:
        names = wheel.namelist()
    # every module of the package ships: a subpackage missing from pyproject.toml
    # would import here from the checkout but fail on Colab
    shipped = {str(path.relative_to(ROOT)) for path in (ROOT / "kernels").rglob("*.py")
               if "solutions" not in path.parts}
    assert shipped - set(names) == set()
    assert not [n for n in names if "solutions" in n]
    # without kernels.solutions, the package and its benchmarks still import
    code = ("import kernels.benchmarks.reduction as b, kernels.harness as h; "
            "assert b.solutions is None; print(h.recorded('reduction.topk').stale)")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    # (-I, and no editable install's hook, which would find the instructors' solutions)
    setup = (f"import sys; sys.path.insert(0, {str(sources)!r}); sys.meta_path[:] = [f for f "
             "in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]")
    proc = subprocess.run([sys.executable, "-I", "-c", f"{setup}; {code}"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("False"), proc.stderr


@pytest.mark.needs("jupytext", "nbformat")
def test_student_notebooks_point_at_the_student_repository(tmp_path):
    src = student.build(tmp_path, repository="https://github.com/school/gpu-course",
                        branch="spring", html=False)
    nb = json.loads((src / "book" / "setup.ipynb").read_text())
    first = "".join(nb["cells"][0]["source"])
    assert 'REPOSITORY = "https://github.com/school/gpu-course"' in first
    assert 'BRANCH = "spring"' in first


@pytest.mark.book
@pytest.mark.needs("jupyter_book", "jupytext", "nbformat")
def test_student_book_has_no_solutions_and_keeps_every_exercise(tmp_path):
    """The student HTML, built without running the chapters: their code cells are the
    instructors' (test above), so running them adds the same outputs to both."""
    student.build(tmp_path, execute=False)
    for name in CHAPTERS:
        page = tmp_path / "_build" / "html" / f"{name}.html"
        assert not leaks(html_text(page)), (name, leaks(html_text(page)))
        exercises = re.findall(r'<div class="[^"]*\bexercise\b', page.read_text())
        md = (ROOT / f"{name}.md").read_text()
        assert len(exercises) == len(list(directive_bodies(md, "exercise"))), name
