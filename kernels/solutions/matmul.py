"""Solutions to the matmul chapter's exercises."""

from numba import cuda, float32

TILE = 16  # transpose: a TILE x TILE block moves a TILE x TILE tile
PADDED = TILE + 2  # the shared tile's row length (a shape must be a constant)
CHUNK = 64  # mat-vec: threads per block, and values of x per shared chunk


def choose_tile(shared_bytes, max_threads, itemsize=4):
    """Largest power-of-two TILE whose two TILE x TILE tiles fit in `shared_bytes`
    and whose TILE x TILE threads fit in one block."""
    tile = 1
    while 2 * (2 * tile) ** 2 * itemsize <= shared_bytes and (2 * tile) ** 2 <= max_threads:
        tile *= 2
    return tile


@cuda.jit
def transpose_tiled_kernel(a, out):
    # A warp is two rows of 16 threads. With rows of 18 words, its column reads below
    # (two columns of 16 rows) fall in 32 different banks; with 17 they would be
    # 2-way conflicted, with 16 8-way. Its row stores cost 2 passes instead of 1.
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx] = a[row, col]  # coalesced read along a row of a
    cuda.syncthreads()
    # The block writes the mirrored tile: threads along x now walk a row of out,
    # which is a column of the shared tile.
    row = cuda.blockIdx.x * TILE + ty
    col = cuda.blockIdx.y * TILE + tx
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = tile[tx, ty]  # coalesced write along a row of out


@cuda.jit
def matvec_tiled_kernel(a, x, y):
    chunk = cuda.shared.array(CHUNK, float32)
    row = cuda.grid(1)  # one row of a, one element of y, per thread
    acc = float32(0.0)
    for start in range(0, x.size, CHUNK):
        i = start + cuda.threadIdx.x
        chunk[cuda.threadIdx.x] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()  # the chunk is complete
        if row < a.shape[0]:
            for j in range(min(CHUNK, x.size - start)):
                acc += a[row, start + j] * chunk[j]
        cuda.syncthreads()  # everyone is done with it before the next one
    if row < a.shape[0]:
        y[row] = acc
