"""What the notebook tools read from the book: _config.yml's repository, _toc.yml's
chapters and requirements.txt's numba-cuda version (each set in one place)."""

import pathlib
import re

import yaml


class ConversionError(ValueError):
    """MyST syntax that has no notebook form yet, or a setting Colab cannot use."""


def book_settings(root):
    """(GitHub owner, repository, branch) from _config.yml: the one place they are set."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    url = config["repository"]["url"].rstrip("/")
    m = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?", url)
    if not m:
        raise ConversionError(f"_config.yml repository.url {url!r}: Colab opens GitHub "
                              "repositories only (https://github.com/OWNER/REPO)")
    return m[1], m[2], config["repository"].get("branch", "main")


def toc_files(root):
    """Every file of _toc.yml, in order, as paths relative to root without suffix."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                found.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    return [str(pathlib.PurePosixPath(f).with_suffix("")) for f in found]


def chapters(root):
    """The toc files that are MyST notebooks (front matter with a kernelspec)."""
    names = []
    for name in toc_files(root):
        path = root / f"{name}.md"
        if path.exists():
            text = path.read_text()
            front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
            if front and "kernelspec" in (yaml.safe_load(front[1]) or {}):
                names.append(name)
    return names


def numba_cuda_version(root):
    """The numba-cuda version the book is tested with (requirements.txt)."""
    m = re.search(r"^numba-cuda(?:\[[^\]]*\])?==([\w.]+)", (root / "requirements.txt").read_text(),
                  re.M)
    return m[1]

