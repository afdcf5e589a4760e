"""Compile a topic's kernels to PTX for compute capability 7.5 and 9.0, without a GPU.

Run as a script in a process with NUMBA_ENABLE_CUDASIM=0 (the test does this):
    python tests/compile_ptx.py TOPIC [--link]
The signatures come from PTX_SIGNATURES in tests/test_TOPIC.py; every CUDA kernel
and device function of kernels/TOPIC.py (or of the modules of the package
kernels/TOPIC/) must have at least one. --link also links each kernel's sm_75 PTX
into a cubin, as numba-cuda does before a launch (cuda.core's Linker: nvJitLink where
installed, else the driver's), and says which linker did it: the T4 check of
tests/colab/gpu_check.py.
"""

import functools
import importlib
import pathlib
import pkgutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from numba.cuda import dispatcher  # noqa: E402
from numba.cuda.compiler import _compile_pyfunc_with_fixup  # noqa: E402
from numba.cuda.dispatcher import CUDADispatcher  # noqa: E402

CCS = ((7, 5), (9, 0))


class _NoDevice:
    """Stands in for get_current_device(): a kernel that calls a device function
    (or an overload such as cuda.cg.this_grid) compiles it for the current
    device's compute capability, and there is no device here."""

    compute_capability = CCS[0]


dispatcher.get_current_device = _NoDevice


@functools.cache
def _compile_ptxes(py_func, sig, device):
    lib, _ = _compile_pyfunc_with_fixup(py_func, sig, device=device, cc=min(CCS), abi="numba")
    ptxes = {}
    for cc in CCS:
        (ptxes[cc],) = lib.get_asm_strs(cc=cc)  # one module, as compile_ptx requires
    return ptxes


def compile_ptxes(kernel, sig, device):
    """{cc: PTX of `kernel` for `sig`} for each of CCS, as cuda.compile_ptx makes it,
    from one lowering. Lowering is most of a compile's time, and numba-cuda (the pinned
    0.30) lowers the same IR for every compute capability from 7.5 on: it looks at it
    only below 6.0 (float64 atomic add) and 7.5 (fast tanh); NVVM then makes each
    compute capability's PTX from that IR. Two kernels of one Python function (compiled
    with other launch bounds, which PTX compiled here does not carry) are compiled once."""
    return _compile_ptxes(kernel.py_func, sig, device)


def link_cubin(ptx, cc):
    """(bytes of cubin, linker) for `ptx` linked for compute capability `cc`, with the
    device runtime where it syncs a grid, as numba-cuda links it (codegen.py)."""
    from cuda.core import Linker, LinkerOptions, ObjectCode
    from numba.cuda.cudadrv.libs import get_cudalib

    codes = [ObjectCode.from_ptx(ptx.encode())]
    if "cudaCG" in ptx:
        with open(get_cudalib("cudadevrt", static=True), "rb") as devrt:
            codes.append(ObjectCode.from_library(devrt.read()))
    linker = Linker(*codes, options=LinkerOptions(arch=f"sm_{cc[0]}{cc[1]}"))
    backend = Linker.which_backend()
    return len(linker.link("cubin").code), str(getattr(backend, "value", backend))


def main(topic, link=False):
    package = importlib.import_module(f"kernels.{topic}")
    modules = [package] + [importlib.import_module(f"{package.__name__}.{m.name}")
                           for m in pkgutil.iter_modules(getattr(package, "__path__", []))]
    found = {name: obj for module in modules for name, obj in vars(module).items()
             if isinstance(obj, CUDADispatcher) and obj.py_func.__module__ == module.__name__}
    signatures = importlib.import_module(f"test_{topic}").PTX_SIGNATURES
    missing = set(found) - set(signatures)
    if missing:
        sys.exit(f"kernels.{topic}: no PTX signature for {sorted(missing)}")
    for name, sigs in signatures.items():
        # a signature may name a device function the topic imports (histogram_stages
        # compiles histogram's count_word_spare, which its kernel calls)
        kernel = found.get(name) or next(getattr(m, name) for m in modules if hasattr(m, name))
        device = kernel.targetoptions.get("device", False)
        for sig in sigs:
            for cc, ptx in compile_ptxes(kernel, sig, device).items():
                if f".target sm_{cc[0]}{cc[1]}" not in ptx:
                    sys.exit(f"{name} {sig}: PTX does not target sm_{cc[0]}{cc[1]}")
                print(f"{topic}.{name} {sig} sm_{cc[0]}{cc[1]}: {len(ptx)} bytes of PTX, "
                      f"{ptx.count('ld.global.v4.')} 128-bit global loads, "
                      f"{ptx.count('ld.local.')} local loads")
                if link and not device and cc == CCS[0]:
                    size, linker = link_cubin(ptx, cc)
                    print(f"{topic}.{name} {sig} sm_{cc[0]}{cc[1]}: {size} bytes of cubin "
                          f"linked by {linker}")


if __name__ == "__main__":
    main(sys.argv[1], link="--link" in sys.argv[2:])
