"""Correct answers to the cooperative-groups exercises, in other styles."""

ANSWERS = {
    "cooperative-ex-rotate": [
        ("while loops, the grid group named g", '''
from numba import cuda


@cuda.jit
def rotate_rows_kernel(m):
    g = cuda.cg.this_grid()
    rows = m.shape[0]
    cols = m.shape[1]
    r = 1
    while r < rows:
        c = cuda.grid(1)
        while c < cols:
            nxt = c + 1
            if nxt == cols:
                nxt = 0
            m[r, c] = m[r - 1, nxt]
            c += cuda.gridsize(1)
        g.sync()
        r += 1
'''),
        ("a device function copies one row", '''
from numba import cuda


@cuda.jit(device=True)
def rotate_row_into(m, r, first, step):
    cols = m.shape[1]
    for c in range(first, cols, step):
        m[r, c] = m[r - 1, (c + 1) % cols]


@cuda.jit
def rotate_rows_kernel(m):
    grid = cuda.cg.this_grid()
    for r in range(1, m.shape[0]):
        rotate_row_into(m, r, cuda.grid(1), cuda.gridsize(1))
        grid.sync()
'''),
        ("indices by hand, the source column counted first", '''
from numba import cuda


@cuda.jit("void(int32[:, ::1])")
def rotate_rows_kernel(m):
    me = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    all_threads = cuda.gridDim.x * cuda.blockDim.x
    n = m.shape[1]
    for r in range(1, m.shape[0]):
        for src in range(me + 1, n + 1, all_threads):
            m[r, src - 1] = m[r - 1, src % n]
        cuda.cg.this_grid().sync()
'''),
    ],
    "cooperative-ex-normalize": [
        ("an atomic per element, then the grid barrier", '''
from numba import cuda


@cuda.jit
def normalize_by_max_kernel(x, out, peak):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.max(peak, 0, x[i])
    cuda.cg.this_grid().sync()
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = x[i] / peak[0]
'''),
        ("a shared-memory tree per block, one atomic per block", '''
from numba import cuda, float32

NB_THREADS = 1024


@cuda.jit
def normalize_by_max_kernel(x, out, peak):
    best = cuda.shared.array(NB_THREADS, float32)
    t = cuda.threadIdx.x
    mine = x[0]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > mine:
            mine = x[i]
    best[t] = mine
    cuda.syncthreads()
    if t == 0:
        for k in range(1, cuda.blockDim.x):
            if best[k] > mine:
                mine = best[k]
        cuda.atomic.max(peak, 0, mine)
    cuda.cg.this_grid().sync()
    scale = peak[0]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = x[i] / scale
'''),
        ("a while loop and the maximum read into a register", '''
from numba import cuda


@cuda.jit
def normalize_by_max_kernel(x, out, peak):
    grid = cuda.cg.this_grid()
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    m = x[0]
    j = i
    while j < x.size:
        m = max(m, x[j])
        j += step
    cuda.atomic.max(peak, 0, m)
    grid.sync()
    top = peak[0]
    j = i
    while j < x.size:
        out[j] = x[j] / top
        j += step
'''),
    ],
    "cooperative-ex-converge": [
        ("a count of the points still moving, per sweep", '''
import numpy as np
from numba import cuda

from kernels.cooperative import cooperative_blocks


@cuda.jit
def jacobi_count_kernel(u, a, b, tol, moving, done):
    grid = cuda.cg.this_grid()
    first = cuda.grid(1)
    step = cuda.gridsize(1)
    n = u.size
    for i in range(first, n, step):
        a[i] = u[i]
    grid.sync()
    sweeps = 0
    for s in range(moving.size):
        if s % 2 == 0:
            src = a
            dst = b
        else:
            src = b
            dst = a
        for i in range(first, n, step):
            if i == 0 or i == n - 1:
                v = src[i]
            else:
                v = 0.5 * (src[i - 1] + src[i + 1])
            if abs(v - src[i]) >= tol:
                cuda.atomic.add(moving, s, 1)
            dst[i] = v
        grid.sync()
        sweeps += 1
        if moving[s] == 0:
            break
    if first == 0:
        done[0] = sweeps


def jacobi_until_converged(u, tol, max_steps):
    a = cuda.device_array(u.size, np.float64)
    b = cuda.device_array(u.size, np.float64)
    moving = cuda.to_device(np.zeros(max_steps, np.int32))
    done = cuda.to_device(np.zeros(1, np.int64))
    args = (cuda.to_device(u), a, b, float(tol), moving, done)
    blocks, threads = cooperative_blocks(jacobi_count_kernel, args, None, 128,
                                         needed=(u.size + 127) // 128)
    jacobi_count_kernel[blocks, threads](*args)
    sweeps = int(done.copy_to_host()[0])
    return (b if sweeps % 2 == 1 else a).copy_to_host(), sweeps
'''),
        ("one block, always resident; the maximum change in shared memory", '''
import numpy as np
from numba import cuda, float64

ONE_BLOCK = 256


@cuda.jit
def jacobi_one_block_kernel(u, out, tmp, tol, max_steps, result):
    grid = cuda.cg.this_grid()
    worst = cuda.shared.array(ONE_BLOCK, float64)
    t = cuda.threadIdx.x
    n = u.size
    for i in range(t, n, ONE_BLOCK):
        out[i] = u[i]
    grid.sync()
    done = 0
    while done < max_steps:
        change = 0.0
        for i in range(t, n, ONE_BLOCK):
            if i == 0 or i == n - 1:
                tmp[i] = out[i]
            else:
                tmp[i] = (out[i - 1] + out[i + 1]) / 2
            change = max(change, abs(tmp[i] - out[i]))
        worst[t] = change
        grid.sync()
        for i in range(t, n, ONE_BLOCK):
            out[i] = tmp[i]
        if t == 0:
            for k in range(1, ONE_BLOCK):
                worst[0] = max(worst[0], worst[k])
        grid.sync()
        done += 1
        stop = worst[0] < tol
        grid.sync()
        if stop:
            break
    if t == 0:
        result[0] = done


def jacobi_until_converged(u, tol, max_steps):
    out = cuda.device_array(u.size, np.float64)
    tmp = cuda.device_array(u.size, np.float64)
    result = cuda.to_device(np.zeros(1, np.int64))
    jacobi_one_block_kernel[1, ONE_BLOCK](cuda.to_device(u), out, tmp, tol, max_steps, result)
    return out.copy_to_host(), int(result.copy_to_host()[0])
'''),
        ("the largest grid the device allows, deltas zeroed on the device", '''
import numpy as np
from numba import cuda

from kernels.cooperative import max_cooperative_blocks


@cuda.jit
def zero_deltas_kernel(d):
    for i in range(cuda.grid(1), d.size, cuda.gridsize(1)):
        d[i] = 0.0


@cuda.jit
def jacobi_sweeps_kernel(cur, nxt, deltas, tol, count):
    g = cuda.cg.this_grid()
    n = cur.size
    done = 0
    for s in range(deltas.size):
        local_max = 0.0
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            v = cur[i] if (i == 0 or i == n - 1) else (cur[i - 1] + cur[i + 1]) * 0.5
            local_max = max(local_max, abs(v - cur[i]))
            nxt[i] = v
        cuda.atomic.max(deltas, s, local_max)
        g.sync()
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            cur[i] = nxt[i]
        g.sync()
        done += 1
        if deltas[s] < tol:
            break
    if cuda.grid(1) == 0:
        count[0] = done


def jacobi_until_converged(u, tol, max_steps):
    cur = cuda.to_device(u.copy())
    nxt = cuda.device_array_like(cur)
    deltas = cuda.device_array(max_steps, np.float64)
    zero_deltas_kernel[4, 64](deltas)
    count = cuda.device_array(1, np.int64)
    args = (cur, nxt, deltas, tol, count)
    blocks = max(1, min(max_cooperative_blocks(jacobi_sweeps_kernel, args, 64),
                        (u.size + 63) // 64))
    jacobi_sweeps_kernel[blocks, 64](*args)
    return cur.copy_to_host(), int(count.copy_to_host()[0])
'''),
        ("the boundary values passed as scalars, the sweeps counted in the kernel", '''
import numpy as np
from numba import cuda

from kernels.cooperative import cooperative_blocks


@cuda.jit
def jc_kernel(u, out, scratch, deltas, tol, left, right, done):
    grid = cuda.cg.this_grid()
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = u.size
    src = u
    sweeps = 0
    for step in range(deltas.size):
        if step % 2 == 0:
            dst = out
        else:
            dst = scratch
        change = 0.0
        for i in range(start, n, stride):
            if i == 0:
                value = left
            elif i == n - 1:
                value = right
            else:
                value = (src[i - 1] + src[i + 1]) * 0.5
            change = max(change, abs(value - src[i]))
            dst[i] = value
        cuda.atomic.max(deltas, step, change)
        grid.sync()
        src = dst
        sweeps += 1
        if deltas[step] < tol:
            break
    if start == 0:
        done[0] = sweeps
    if sweeps % 2 == 0:
        for i in range(start, n, stride):
            out[i] = scratch[i]

def jacobi_until_converged(u, tol, max_steps):
    d_u = cuda.to_device(u)
    out = cuda.device_array_like(d_u)
    scratch = cuda.device_array_like(d_u)
    deltas = cuda.to_device(np.zeros(max_steps, np.float64))
    done = cuda.to_device(np.zeros(1, np.int64))
    args = (d_u, out, scratch, deltas, float(tol), float(u[0]), float(u[-1]), done)
    blocks, threads = cooperative_blocks(jc_kernel, args, None, 128,
                                         needed=(u.size + 127) // 128)
    jc_kernel[blocks, threads](*args)
    return out.copy_to_host(), int(done.copy_to_host()[0])
'''),
    ],
}
