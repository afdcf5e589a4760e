"""A bounded spin lock on the GPU, and the total in device memory that it guards.

    lock / unlock   take and release lock i of an int32 array (0 free, 1 taken), with
                    the memory fences that make the guarded data safe to read and write
    DeviceTotal     a total, its mutex and a failure flag in device memory, for the
                    launchers of kernels.mutex and the mutex exercises' solutions

Every lock spins a bounded number of times (``max_spins``, MAX_SPINS by default). A
thread that gives up sets a flag, and reading the result then raises LockTimeout: a
lock that is never released gives a clear message instead of a GPU that hangs for ever.
"""

import numpy as np
from numba import cuda

from kernels import SIMULATOR

# How many times a thread may find the mutex taken before it gives up. Measured on an
# H200, in a sweep that is not among the book's recordings: one try takes 0.2-0.8 us,
# and the longest honest wait (39,063 blocks queueing for one mutex) took 77,689 tries.
# On the H100 that whole queue takes about a quarter of a second (mutex.contention in
# book/_data/bench), less than 2**22 tries of 0.2 us. So a lock nobody releases is
# reported within seconds by the blocks that are resident; a grid of many more blocks
# than fit at once waits that long again for each wave of blocks that follows.
# Simulated threads take turns on one core; a few thousand tries cover any honest
# wait there.
MAX_SPINS = 10_000 if SIMULATOR else 1 << 22


class LockTimeout(RuntimeError):
    """A thread spun max_spins times without taking a lock."""


# -------------------------------------------------------------------- kernels


@cuda.jit(device=True)
def lock(mutex, i, max_spins):
    """Take lock i of `mutex` (0 = free, 1 = taken); False if still taken after max_spins tries."""
    spins = 0
    # compare-and-swap writes 1 only where it finds 0, and returns what it found:
    # exactly one of the threads racing for a free lock sees 0.
    while cuda.atomic.cas(mutex, i, 0, 1) != 0:
        spins += 1
        if spins >= max_spins:
            return False
    # No read of the guarded data may happen before the lock is ours.
    cuda.threadfence()
    return True


@cuda.jit(device=True)
def unlock(mutex, i):
    """Release lock i, after making this thread's writes visible to the whole GPU."""
    cuda.threadfence()
    cuda.atomic.exch(mutex, i, 0)


@cuda.jit
def reset_kernel(total, start, mutex, failed):
    # Queued on the GPU like the kernel that follows, so the host never waits.
    total[0] = start
    mutex[0] = 0
    failed[0] = 0


# ------------------------------------------------------------ host functions


class DeviceTotal:
    """A total in device memory, the mutex that guards it, and the failure flag.

    Launchers queue their work into one and return it; ``value()`` waits for the GPU
    and returns the total, or raises LockTimeout if a thread gave up on the lock.
    Passing the same one to many calls (``into=``) keeps every call asynchronous:
    allocating device memory can make the host wait for the GPU."""

    def __init__(self, dtype=np.float32):
        self.dtype = np.dtype(dtype)
        self.total = cuda.device_array(1, self.dtype)
        self.mutex = cuda.device_array(1, np.int32)
        self.failed = cuda.device_array(1, np.int32)

    def reset(self, start=0):
        """Queue a kernel that sets the total to `start` and frees the lock."""
        reset_kernel[1, 1](self.total, self.dtype.type(start), self.mutex, self.failed)
        return self

    def value(self):
        if self.failed.copy_to_host()[0]:
            raise LockTimeout(
                "a thread gave up waiting for the mutex: it found it taken on every "
                "one of its tries, so the lock was never released (a path that keeps "
                "it, or a mutex that did not start at 0). Without the bounded spin this "
                "kernel would have hung the GPU. The total is incomplete.")
        return self.total.copy_to_host()[0]
