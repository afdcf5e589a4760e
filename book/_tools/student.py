"""Build the student edition: the book and its Colab notebooks without the solutions.

    python book/_tools/student.py [--out _build/student] [--repository URL] [--branch B]
                                  [--no-html]

writes a complete source tree to OUT/src (the book's sources with every {solution}
block and every code cell that uses ``kernels.solutions`` removed, the `kernels`
package without ``kernels.solutions``, installable as it is, and the notebooks
generated from those sources), then builds its HTML into OUT/_build/html, every
chapter executed. The tests and benchmarks that need the solutions stay in the
instructors' repository.
Exercises, checker cells and everything else stay. Push OUT/src to a repository (or
branch) of its own and pass its URL and branch: the notebooks' first cell and the
book's Colab buttons then point there, not at the instructors' repository.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import myst  # noqa: E402
import notebooks  # noqa: E402

ROOT = notebooks.ROOT
USES_SOLUTIONS = re.compile(r"\bkernels\.solutions\b|\bfrom kernels import[^\n]*\bsolutions\b")


def strip(text):
    """MyST text without {solution} blocks and code cells that use kernels.solutions."""
    kept, dropped = [], False
    for block in myst.split(text):
        if isinstance(block, str):
            if dropped:  # the blank line before the dropped block already separates
                block = block.lstrip("\n")
                if not block:
                    continue
            kept.append(block)
        elif block.name == "solution" or (block.name == "code-cell" and USES_SOLUTIONS.search(
                "\n".join(block.body))):
            dropped = True
            continue
        elif block.name is None or block.name == "code-cell":
            kept.append(block.raw)
        else:
            _, content = block.options_and_content()
            inner = strip(content)
            if inner == content:
                kept.append(block.raw)
            else:  # the same block, options as they were, with the stripped content
                body = "\n".join(block.body).replace(content, inner, 1)
                indented = "\n".join(block.indent + ln if ln else ln for ln in body.split("\n"))
                kept.append(f"{block.indent}{block.fence}{block.info}\n{indented}\n"
                            f"{block.indent}{block.fence}")
        dropped = False
    return "\n".join(kept)


def without_solutions(pyproject):
    """pyproject.toml's text with kernels.solutions out of the package list."""
    text = re.sub(r'"kernels\.solutions",\s*', "", pyproject)
    packages = tomllib.loads(text)["tool"]["setuptools"]["packages"]
    if "kernels.solutions" in packages or "kernels" not in packages:
        raise ValueError("pyproject.toml: [tool.setuptools] packages must list kernels and "
                         "kernels.solutions as quoted names followed by a comma")
    return text


def copy_sources(root, src, repository=None, branch=None, execute=True):
    """The student source tree at `src`: the chapters without solutions, the package."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["title"] = f"{config['title']} (student edition)"
    if repository:
        config["repository"]["url"] = repository
    if branch:
        config["repository"]["branch"] = branch
    if not execute:
        config.setdefault("execute", {})["execute_notebooks"] = "off"
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    for name in ("_toc.yml", "requirements.txt"):
        shutil.copy2(root / name, src / name)
    (src / "pyproject.toml").write_text(without_solutions((root / "pyproject.toml").read_text()))
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    shutil.copytree(root / "book", src / "book",
                    ignore=lambda d, names: set(junk(d, names)) | {
                        n for n in names if n.endswith(".ipynb")})
    shutil.copytree(root / "kernels", src / "kernels",
                    ignore=lambda d, names: set(junk(d, names)) | (
                        {"solutions"} if pathlib.Path(d) == root / "kernels" else set()))
    for md in (src / "book").rglob("*.md"):
        md.write_text(strip(md.read_text()))


def build(out, repository=None, branch=None, html=True, execute=True, root=ROOT):
    """Write the student edition of the book at `root` to out/src (HTML: out/_build/html).

    execute=False builds the HTML without running the chapters (a quick look at the
    text; the numbers glued into it are then missing, so warnings are not errors)."""
    out = pathlib.Path(out).resolve()
    src = out / "src"
    copy_sources(root, src, repository, branch, execute)
    # the glued numbers from the instructors' book, whose stores the tests keep fresh
    for path, text in notebooks.generated(src, glue_root=root).items():
        path.write_text(text)
    if html:
        # chapters import the student tree's copy of `kernels`
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(src)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        jb = pathlib.Path(sys.executable).parent / "jupyter-book"
        strict = ["--warningiserror", "--keep-going"] if execute else []
        subprocess.run([str(jb), "build", str(src), "--path-output", str(out), *strict],
                       check=True, env=env)
    return src


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "_build" / "student")
    parser.add_argument("--repository", help="GitHub URL the student edition is pushed to")
    parser.add_argument("--branch", help="its branch")
    parser.add_argument("--no-html", dest="html", action="store_false",
                        help="only the sources and notebooks, no book build")
    args = parser.parse_args(argv)
    src = build(args.out, args.repository, args.branch, args.html)
    print(f"Student sources and notebooks: {src}")
    if args.html:
        print(f"Student book: file://{args.out.resolve() / '_build' / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
