import numpy as np
import pytest
from numba import cuda

from kernels import locks
from ptx import assert_compiles

PTX_SIGNATURES = {
    "lock": ["b1(int32[::1], int64, int64)"],
    "unlock": ["void(int32[::1], int64)"],
    "reset_kernel": ["void(float32[::1], float32, int32[::1], int32[::1])",
                     "void(int64[::1], int64, int32[::1], int32[::1])"],
}


@cuda.jit
def count_blocks_kernel(counter, mutex, failed, max_spins):
    # thread 0 of each block adds one under lock 1 of two (lock 0 is never touched)
    if cuda.threadIdx.x == 0:
        if locks.lock(mutex, 1, max_spins):
            counter[0] += 1
            locks.unlock(mutex, 1)
        else:
            failed[0] = 1


def test_lock_serialises_the_update_and_frees_the_lock():
    counter = cuda.to_device(np.zeros(1, np.int64))
    mutex = cuda.to_device(np.zeros(2, np.int32))
    failed = cuda.to_device(np.zeros(1, np.int32))
    count_blocks_kernel[7, 3](counter, mutex, failed, locks.MAX_SPINS)
    assert counter.copy_to_host()[0] == 7 and failed.copy_to_host()[0] == 0
    assert mutex.copy_to_host().tolist() == [0, 0]


def test_a_lock_never_released_makes_the_total_raise():
    total = locks.DeviceTotal(np.int64).reset(5)
    total.mutex = cuda.to_device(np.ones(2, np.int32))  # taken, and nobody will release it
    count_blocks_kernel[2, 2](total.total, total.mutex, total.failed, 10)
    with pytest.raises(locks.LockTimeout, match="never released"):
        total.value()


def test_reset_sets_the_start_and_frees_the_lock():
    total = locks.DeviceTotal(np.float32)
    total.mutex = cuda.to_device(np.ones(1, np.int32))
    total.failed = cuda.to_device(np.ones(1, np.int32))
    assert total.reset(1.5).value() == np.float32(1.5)
    assert total.mutex.copy_to_host()[0] == 0 and total.dtype == np.float32


def test_compiles_to_ptx():
    assert_compiles("locks")
