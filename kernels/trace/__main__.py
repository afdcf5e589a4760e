"""``python -m kernels.trace JOB RESULT``: the tracer's simulator process (see
kernels.trace.remote). Started by the tracer on a GPU machine, not by hand."""

import os
import sys

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    sys.exit("kernels.trace runs on the simulator: NUMBA_ENABLE_CUDASIM=1 must be set")

from kernels.trace import remote  # noqa: E402  (after the check: kernels reads the setting)

if len(sys.argv) != 3:
    sys.exit("usage: python -m kernels.trace JOB RESULT (started by kernels.trace itself)")
remote.child(sys.argv[1], sys.argv[2])
