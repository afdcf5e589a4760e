"""What Numba targets in an answer process: a GPU's compile without a GPU, and jit.

The process that forks the answer processes (kernels.grading.answers.main) sets these up
once, before any code of the student's is loaded. The certifying process compiles a
kernel for a GPU, compute capability 7.5, where none need be present (certify,
compile_without_device); every answer process makes Numba's jit decorators take what
they take in a notebook on a GPU (jit_as_a_gpu_takes).
"""

import re

CONSTANT_BYTES = 64 << 10  # a kernel's constant memory (global arrays it reads)


def certify(kernel, signature):
    """Compile `kernel` for a GPU (compute capability 7.5) with `signature`, in a process
    where Numba targets a GPU (none need be present). A kernel that compiles is device
    code: run on the simulator, it does only what a GPU could."""
    from numba import cuda

    function = getattr(kernel, "py_func", None)
    if function is None or kernel.targetoptions.get("device"):
        raise TypeError(f"{getattr(kernel, '__name__', type(kernel).__name__)} is not a "
                        "CUDA kernel (a function decorated with @cuda.jit)")
    from numba.core import sigutils

    arguments, _ = sigutils.normalize_signature(signature)
    takes = function.__code__.co_argcount
    if takes != len(arguments) and not function.__code__.co_flags & 0x04:  # no *args
        raise TypeError(f"{function.__name__} takes {takes} argument"
                        f"{'' if takes == 1 else 's'}; the exercise launches it with "
                        f"{len(arguments)}")
    ptx, _ = cuda.compile_ptx(function, signature, cc=(7, 5))
    constant = sum(int(n) for n in re.findall(r"^\s*\.const\b[^\n\[]*\[(\d+)\]", ptx, re.M))
    if constant > CONSTANT_BYTES:  # the assembler, not NVVM, refuses this
        raise ValueError(f"{function.__name__} reads {constant:,} bytes of constant arrays "
                         f"(its global arrays); a GPU's constant memory holds "
                         f"{CONSTANT_BYTES:,}")


def compile_without_device():
    """Where Numba targets a GPU and there is none (the certifying process on the
    simulator): compile for compute capability 7.5, Colab's T4, wherever Numba asks the
    current device (a device function); and make every jit lazy, since compiling a
    kernel with an eager signature also loads it onto a device. The kernel is then
    compiled with the exercise's signature (certify)."""
    from numba import cuda
    from numba.core import sigutils
    from numba.cuda import dispatcher

    class NoDevice:
        compute_capability = (7, 5)

    dispatcher.get_current_device = NoDevice
    jit = cuda.jit

    def lazy_jit(function_or_signature=None, *args, **options):
        if function_or_signature is not None and (
                sigutils.is_signature(function_or_signature)
                or isinstance(function_or_signature, list)):
            return jit(*args, **options)  # the signature dropped: compiled on demand
        return jit(function_or_signature, *args, **options)

    cuda.jit = lazy_jit


# Options of a GPU's cuda.jit that change only how the GPU compiles a kernel, which
# Numba's simulator does not take: dropped there, so that a kernel a GPU takes loads
GPU_ONLY_OPTIONS = ("lineinfo", "max_registers", "launch_bounds", "forceinline", "lto")


def jit_as_a_gpu_takes():
    """Make Numba's jit decorators take what they take in a notebook on a GPU. `cache`
    is dropped: Numba caches a notebook cell's function by IPython's cell files, and a
    cell run here is not one (it raised "no locator available"), while each answer is
    compiled afresh anyway. On the simulator the GPU-only options are dropped too (the
    certifying process compiles the kernel exercises' kernels with them, for a GPU)."""
    import functools

    import numba
    from numba import cuda

    from kernels import SIMULATOR

    def taking(jit, dropped):
        @functools.wraps(jit)
        def jit_(*args, **options):
            return jit(*args, **{k: v for k, v in options.items() if k not in dropped})
        return jit_

    cuda.jit = taking(cuda.jit, ("cache",) + (GPU_ONLY_OPTIONS if SIMULATOR else ()))
    numba.jit, numba.njit = (taking(f, ("cache",)) for f in (numba.jit, numba.njit))
