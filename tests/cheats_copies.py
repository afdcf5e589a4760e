"""Cheats on the kernel copies (kernels.grading.copies), from an outside attack on them:
each is a reduction notebook's argmax cell that launches a kernel a GPU cannot run (a
16-bit atomic) and tries to keep the grader from compiling, or running, what it launched."""

# its kernel object's function is a callable that shows a no-op's code and calls a
# 16-bit atomic kernel
DISGUISE = '''\
import numpy as np
from numba import cuda


def _noop(x, best, first, ties):
    pass


def _real(x, best, first, ties):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == best[0]:
            cuda.atomic.min(first, 0, i)
            cuda.atomic.add(ties, 0, 1)  # 16 bits: a GPU has no 16-bit atomic


class Face:
    def __init__(self, shown, runs):
        self.shown, self.runs = shown, runs

    def __getattr__(self, name):
        return getattr(self.shown, name)

    def __call__(self, *args):
        return self.runs(*args)


@cuda.jit
def _max_kernel(x, best):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(best, 0, x[i])


_first_kernel = cuda.jit(Face(_noop, _real))


def argmax(x, blocks):
    d_x = cuda.to_device(x)
    best = cuda.to_device(np.full(1, np.iinfo(x.dtype).min, x.dtype))
    first = cuda.to_device(np.full(1, x.size, np.int64))
    ties = cuda.to_device(np.zeros(1, np.int16))
    _max_kernel[blocks, 128](d_x, best)
    _first_kernel[blocks, 128](d_x, best, first, ties)
    return int(first.copy_to_host()[0])
'''

# a builtin replaced (through a computed module name) to answer inside the kernel
BUILTINS_LEN = '''\
import sys
import numpy as np
from numba import cuda

# A name the kernel reads that its module does not define is looked up in builtins, which
# describe() does not describe: the certifier compiles Python's own len, the simulator
# runs this one (only on a simulated kernel's arrays).
_table = sys.modules["built" + "ins"]
_len = _table.len


def _len_in_kernels(obj, _len=_len):
    if type(obj).__name__ != "FakeWithinKernelCUDAArray":  # only a simulated kernel's
        return _len(obj)
    return int(np.argmax(obj._item._ary))


_table.len = _len_in_kernels


@cuda.jit
def _first_kernel(x, first):
    m = x[0]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):  # every element read
        m = max(m, x[i])
    if cuda.grid(1) == 0:
        first[0] = len(x) + 0 * m  # on a GPU: x.size


def argmax(x, blocks):
    _table.len = _len_in_kernels
    first = cuda.to_device(np.zeros(1, np.int64))
    _first_kernel[blocks, 128](cuda.to_device(x), first)
    return int(first.copy_to_host()[0])
'''

# its kernel's __module__ set to Numba's, so that it would not be described
MODULE_SPOOF = '''\
import numpy as np
from numba import cuda


@cuda.jit
def _max_kernel(x, best):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(best, 0, x[i])


def _first_kernel(x, best, first, ties):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == best[0]:
            cuda.atomic.min(first, 0, i)
            cuda.atomic.add(ties, 0, 1)  # 16 bits: a GPU has no 16-bit atomic


_first_kernel.__module__ = "numba.np"  # counted as Numba's own kernel
_first_kernel = cuda.jit(_first_kernel)


def argmax(x, blocks):
    d_x = cuda.to_device(x)
    best = cuda.to_device(np.full(1, np.iinfo(x.dtype).min, x.dtype))
    first = cuda.to_device(np.full(1, x.size, np.int64))
    ties = cuda.to_device(np.zeros(1, np.int16))
    _max_kernel[blocks, 128](d_x, best)
    _first_kernel[blocks, 128](d_x, best, first, ties)
    return int(first.copy_to_host()[0])
'''

# json.dumps replaced so that the launch record would not reach the judge
JSON_STRIP = '''\
import json

import numpy as np
from numba import cuda

_dumps = json.dumps


def _without_launches(tree):
    if isinstance(tree, list):
        return [_without_launches(t) for t in tree
                if not (isinstance(t, list) and t[:1] == ["launched"])]
    if isinstance(tree, dict):
        return {k: _without_launches(v) for k, v in tree.items()}
    return tree


def _quiet_dumps(obj, *args, **kwargs):
    return _dumps(_without_launches(obj), *args, **kwargs)


@cuda.jit
def _max_kernel(x, best):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(best, 0, x[i])


@cuda.jit
def _first_kernel(x, best, first, ties):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == best[0]:
            cuda.atomic.min(first, 0, i)
            cuda.atomic.add(ties, 0, 1)  # 16 bits: a GPU has no 16-bit atomic


def argmax(x, blocks):
    json.dumps = _quiet_dumps
    d_x = cuda.to_device(x)
    best = cuda.to_device(np.full(1, np.iinfo(x.dtype).min, x.dtype))
    first = cuda.to_device(np.full(1, x.size, np.int64))
    ties = cuda.to_device(np.zeros(1, np.int16))
    _max_kernel[blocks, 128](d_x, best)
    _first_kernel[blocks, 128](d_x, best, first, ties)
    return int(first.copy_to_host()[0])
'''

# the simulator's launch underneath the grader's record, called directly
UNWRAPPED_LAUNCH = '''\
import numpy as np
from numba import cuda


@cuda.jit
def _max_kernel(x, best):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(best, 0, x[i])


@cuda.jit
def _first_kernel(x, best, first, ties):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == best[0]:
            cuda.atomic.min(first, 0, i)
            cuda.atomic.add(ties, 0, 1)  # 16 bits: a GPU has no 16-bit atomic



@cuda.jit
def _flag_kernel(x, flag):
    s = 0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        s += x[i] & 0
    if cuda.grid(1) == 0:
        flag[0] = 1 + s


def _raw(kernel):
    """The simulator's own launch, under every wrapper (the course's simulator module
    keeps it as _KERNEL_CALL); None where a tracer launches its own way."""
    import kernels.simulator as course_simulator

    f = getattr(course_simulator, "_KERNEL_CALL", None)
    if getattr(f, "__module__", "").startswith("numba"):
        return f
    return None


def argmax(x, blocks):
    d_x = cuda.to_device(x)
    flag = cuda.to_device(np.zeros(1, np.int64))
    _flag_kernel[blocks, 128](d_x, flag)
    best = cuda.to_device(np.full(1, np.iinfo(x.dtype).min, x.dtype))
    first = cuda.to_device(np.full(1, x.size, np.int64))
    ties = cuda.to_device(np.zeros(1, np.int16))
    launch = _raw(_max_kernel)
    if launch is None:  # traced: the tracer records what it launches; show it the rest
        _max_kernel[blocks, 128](d_x, best)
        return 0
    launch(_max_kernel[blocks, 128], d_x, best)
    launch(_first_kernel[blocks, 128], d_x, best, first, ties)
    if flag.copy_to_host()[0] != 1:
        return -1
    return int(first.copy_to_host()[0])
'''


# name -> argmax cell
COPY_TRICKS = {"disguise": DISGUISE, "builtins-len": BUILTINS_LEN, "module-spoof": MODULE_SPOOF,
               "json-strip": JSON_STRIP, "unwrapped-launch": UNWRAPPED_LAUNCH}
