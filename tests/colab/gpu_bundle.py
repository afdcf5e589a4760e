"""Pack what tests/colab/gpu_check.py needs on the lent GPU into DEST/.colab/{a,b}.

    python tests/colab/gpu_bundle.py [DEST]        (default: this checkout)

The lent GPU machine has Python 3.12 and no package index, and the device tool
carries at most 64 MiB a call. So: the CUDA 12 stack exactly as the notebooks' first
cell installs it on Colab (read off the emulated Colab runtime after running the
first cell's own install there), as Python 3.12 wheels, the big NVIDIA libraries
unpacked, trimmed to what is loaded and xz-compressed; Colab's numpy and IPython; and
this tree with freshly generated notebooks. Part a and part b each stay under the
limit; gpu_check.py says how to unpack them (its docstring).
"""

import json
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "book" / "_tools")]
import colab_runtime  # noqa: E402
import notebooks  # noqa: E402

WHEELS = ["cuda-bindings", "cuda-core", "cuda-pathfinder"]  # small: carried as wheels
LIBS_A = ["nvidia-nvjitlink-cu12", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-runtime-cu12"]
LIBS_B = ["nvidia-cuda-nvrtc-cu12"]
# Colab's, for the notebooks (the GPU image's numpy 2.5 is too new for numba-cuda 0.30);
# IPython for the cells that display, without its optional completer (jedi)
PLAIN = ["numpy", "ipython", "traitlets", "decorator", "pickleshare", "backcall",
         "matplotlib-inline", "pexpect", "ptyprocess", "prompt_toolkit", "wcwidth", "pygments",
         "pyyaml"]  # the notebook tools read _toc.yml
UNUSED = ("/include/", "/bin/", ".alt.so")  # headers, nvcc/ptxas, the alternative builds


def first_cell_install():
    """{distribution: version} of a Colab runtime after the first cell's install."""
    with tempfile.TemporaryDirectory() as tmp:
        runtime = colab_runtime.fresh_runtime(pathlib.Path(tmp) / "rt",
                                              colab_runtime.colab_python()[0])
        python = str(runtime / "bin" / "python")
        spec = f"numba-cuda[cu12]=={notebooks.numba_cuda_version(ROOT)}"
        code = (f"import sys; sys.path.insert(0, {str(ROOT / 'book' / '_tools')!r}); "
                f"import colab_setup; sys.exit(colab_setup.install([{spec!r}]))")
        subprocess.run([python, "-c", code], check=True, env=colab_runtime.pip_env())
        listed = subprocess.run([python, "-m", "pip", "list", "--format", "json"],
                                capture_output=True, text=True, check=True).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(listed)}


def download(specs, dest):
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
                    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64", "--platform", "manylinux2010_x86_64",
                    "-d", str(dest), *specs], check=True)


def pack_libraries(wheels, archive):
    """The wheels unpacked as site-packages, less what is never loaded, as tar.xz."""
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                for info in z.infolist():
                    if not info.is_dir() and not any(u in "/" + info.filename for u in UNUSED):
                        member = tarfile.TarInfo(info.filename)
                        member.size, member.mode = info.file_size, 0o755
                        with z.open(info) as data:
                            tar.addfile(member, data)


def pack_tree(archive):
    """This checkout's files, with every notebook generated afresh from its chapter."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = pathlib.Path(tmp) / "tree"
        tree.mkdir()
        colab_runtime.snapshot(ROOT, tree, "main")
        shutil.rmtree(tree / ".git")
        for path, text in notebooks.generated(tree).items():
            path.write_text(text)
        with tarfile.open(archive, "w:xz") as tar:
            tar.add(tree, arcname=".")


def main(dest=ROOT):
    out = pathlib.Path(dest).resolve() / ".colab"
    shutil.rmtree(out, ignore_errors=True)
    versions = first_cell_install()
    print("the first cell installs:", {n: versions[n] for n in WHEELS + LIBS_A + LIBS_B})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for part, libs, wheels in (("a", LIBS_A, WHEELS), ("b", LIBS_B, PLAIN)):
            (out / part).mkdir(parents=True)
            pinned = [f"{n}=={versions[n]}" if n in versions else n for n in wheels]
            download(pinned, out / part)
            download([f"{n}=={versions[n]}" for n in libs], tmp / part)
            pack_libraries(sorted((tmp / part).glob("*.whl")), out / part / "libs.tar.xz")
    pack_tree(out / "b" / "tree.tar.xz")
    (out / "versions.json").write_text(json.dumps(versions, indent=1, sort_keys=True))
    for part in ("a", "b"):
        size = sum(p.stat().st_size for p in (out / part).iterdir())
        print(f".colab/{part}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main(*sys.argv[1:2])
