"""Compile a topic's kernels to PTX for compute capability 7.5 and 9.0, without a GPU.

Run as a script in a process with NUMBA_ENABLE_CUDASIM=0 (the test does this):
    python tests/compile_ptx.py TOPIC
The signatures come from PTX_SIGNATURES in tests/test_TOPIC.py; every CUDA kernel
and device function of kernels/TOPIC.py must have at least one.
"""

import importlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from numba import cuda  # noqa: E402
from numba.cuda import dispatcher  # noqa: E402
from numba.cuda.dispatcher import CUDADispatcher  # noqa: E402

CCS = ((7, 5), (9, 0))


class _NoDevice:
    """Stands in for get_current_device(): a kernel that calls a device function
    (or an overload such as cuda.cg.this_grid) compiles it for the current
    device's compute capability, and there is no device here."""

    compute_capability = CCS[0]


dispatcher.get_current_device = _NoDevice


def main(topic):
    module = importlib.import_module(f"kernels.{topic}")
    signatures = importlib.import_module(f"test_{topic}").PTX_SIGNATURES
    found = {name for name, obj in vars(module).items()
             if isinstance(obj, CUDADispatcher) and obj.py_func.__module__ == module.__name__}
    missing = found - set(signatures)
    if missing:
        sys.exit(f"kernels.{topic}: no PTX signature for {sorted(missing)}")
    for name, sigs in signatures.items():
        kernel = getattr(module, name)
        device = kernel.targetoptions.get("device", False)
        for sig in sigs:
            for cc in CCS:
                ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cc, device=device)
                if f".target sm_{cc[0]}{cc[1]}" not in ptx:
                    sys.exit(f"{name} {sig}: PTX does not target sm_{cc[0]}{cc[1]}")
                print(f"{topic}.{name} {sig} sm_{cc[0]}{cc[1]}: {len(ptx)} bytes of PTX")


if __name__ == "__main__":
    main(sys.argv[1])
