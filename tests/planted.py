"""Planted submissions: for every exercise a correct answer, one with a classic bug, one
computed on the host, and the book's empty placeholder, as notebooks a student could
hand in. tests/test_grading.py grades them through the real grader.

Correct and buggy answers are the course's solutions, pasted as student code: each
topic's solution module runs in a module of its own (``answers_<topic>``, outside the
``kernels`` package, so its kernels are the student's), and a bug is one textual change
to that source. The bugs here are the ones the simulator shows every time; the races
(a non-atomic update, a missing barrier, a bin updated without its lock, streams that
share buffers) rarely show in results on the simulator, so they are planted in RACES:
the checkers' race case catches them there, and a GPU's repeated runs catch them too.
"""

import ast
import json
import pathlib
import re

from kernels.checks import registry

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "kernels" / "solutions"
SOLVED_BY = {"mutex-ex-argmax": "argmax_mutex", "mutex-ex-bins": "bin_product"}

# label -> (the classic bug, text in the solution, its replacement[, more pairs])
BUGS = {
    "gridstride-ex-saxpy": ("off-by-one stride", "range(start, out.size, stride)",
                            "range(start, out.size, stride + 1)"),
    "gridstride-ex-clip": ("off-by-one bound: the last column is never written",
                           "range(col0, x.shape[1], col_stride)",
                           "range(col0, x.shape[1] - 1, col_stride)"),
    "gridstride-ex-reverse": ("the loop runs to n, so every pair is swapped twice",
                              "range(start, n // 2, stride)", "range(start, n, stride)"),
    "atomics-ex-256": ("wrong initial value of the histogram",
                       "hist = cuda.to_device(np.zeros(256, np.int64))",
                       "hist = cuda.to_device(np.ones(256, np.int64))"),
    "atomics-ex-words": ("missing bounds check: element 0 reads data[-1]",
                         "(i == 0 or not is_letter(data[i - 1]))",
                         "(not is_letter(data[i - 1]))"),
    "atomics-ex-positions": ("wrong initial value of the counter",
                             "count = cuda.to_device(np.zeros(1, np.int32))",
                             "count = cuda.to_device(np.ones(1, np.int32))"),
    "reduction-ex-mean-variance": ("the tree starts at a quarter of the block",
                                   "half = THREADS // 2\n    while half > 0:  # two trees",
                                   "half = THREADS // 4\n    while half > 0:  # two trees"),
    "reduction-ex-argmax": ("wrong initial value: 0 beats every negative key",
                            "first_key = (np.int64(x[0]) << 32) | LOW_BITS", "first_key = 0"),
    "reduction-ex-kahan": ("the compensation is dropped", "c = (t - s) - y", "c = 0.0"),
    "reduction-ex-topk": ("wrong initial value: 0 instead of the smallest int32",
                          "best[tid, j] = -2**31", "best[tid, j] = 0"),
    "mutex-ex-deadlock": ("returns while holding the lock",
                          "        if s_block[0] != 0:\n            total[0] += s_block[0]\n",
                          "        if s_block[0] == 0:\n            return\n"
                          "        total[0] += s_block[0]\n"),
    "mutex-ex-argmax": ("wrong initial value of the best value",
                        "np.full(1, -np.inf, np.float32)", "np.zeros(1, np.float32)"),
    "mutex-ex-bins": ("wrong initial value of the products",
                      "np.ones(nbins, np.float32)", "np.zeros(nbins, np.float32)"),
    "streams-ex-one-stream": ("the copy back to the host is missing",
                              "    d_out.copy_to_host(out, stream=stream)\n", ""),
    "streams-ex-chunked": ("off-by-one: each chunk's last element is never copied back",
                           "d_out[lo:hi].copy_to_host(out[lo:hi], stream=s)",
                           "d_out[lo:hi - 1].copy_to_host(out[lo:hi - 1], stream=s)"),
    "streams-ex-bounded": ("missing bounds: a short last chunk copies a whole buffer",
                           "m = hi - lo", "m = largest"),
    "cooperative-ex-rotate": ("wrong wrap-around", "(col + 1) % cols", "(col + 1) % (cols + 1)"),
    "cooperative-ex-normalize": ("divides by the thread's own maximum, not the grid's",
                                 "out[i] = x[i] / peak[0]", "out[i] = x[i] / largest"),
    "cooperative-ex-converge": ("one slot for the changes of every sweep, so one sweep",
                                "np.zeros(max_steps, np.float64)", "np.zeros(1, np.float64)"),
    "matmul-ex-choose-tile": ("off-by-one: a tile that fills shared memory exactly is refused",
                              "* itemsize <= shared_bytes", "* itemsize < shared_bytes"),
    "matmul-ex-transpose": ("missing bounds check on the write",
                            "    if row < out.shape[0] and col < out.shape[1]:\n"
                            "        out[row, col] = tile[tx, ty]",
                            "    out[row, col] = tile[tx, ty]"),
    "matmul-ex-matvec": ("unbounded tile: reads past the end of x and of a's rows",
                         "chunk[cuda.threadIdx.x] = x[i] if i < x.size else float32(0.0)",
                         "chunk[cuda.threadIdx.x] = x[i]",
                         "range(min(CHUNK, x.size - start))", "range(CHUNK)"),
}

# Races: wrong on a GPU, usually right on the simulator (blocks run one at a time), so
# the checkers' race case (kernels.checks.races) must catch each on the simulator too.
RACES = {
    "gridstride-ex-reverse": ("the loop runs to n: threads i and n-1-i swap one pair",
                              "range(start, n // 2, stride)", "range(start, n, stride)"),
    "atomics-ex-256": ("non-atomic update", "cuda.atomic.add(local, data[i], 1)",
                       "local[data[i]] += 1"),
    "atomics-ex-words": ("non-atomic update",
                         "cuda.atomic.add(local, min(end - i, WORD_BINS - 1), 1)",
                         "local[min(end - i, WORD_BINS - 1)] += 1"),
    "atomics-ex-positions": ("the slot counter read and written without an atomic",
                             "slot = cuda.atomic.add(count, 0, 1)",
                             "slot = count[0]\n            count[0] = slot + 1"),
    "reduction-ex-mean-variance": ("missing syncthreads in the tree",
                                   "            squares[tid] += squares[tid + half]\n"
                                   "        cuda.syncthreads()\n",
                                   "            squares[tid] += squares[tid + half]\n"),
    "reduction-ex-argmax": ("missing syncthreads before the tree",
                            "    keys[tid] = best\n    cuda.syncthreads()\n",
                            "    keys[tid] = best\n"),
    "reduction-ex-kahan": ("missing syncthreads in the tree",
                           "            partials[tid] += partials[tid + half]\n"
                           "        cuda.syncthreads()\n",
                           "            partials[tid] += partials[tid + half]\n"),
    "reduction-ex-topk": ("missing syncthreads in the tree",
                          "                best[tid, j] = merged[j]\n        cuda.syncthreads()\n",
                          "                best[tid, j] = merged[j]\n"),
    "mutex-ex-deadlock": ("the total updated without the lock",
                          "        if not lock(mutex, 0, max_spins):\n"
                          "            failed[0] = 1\n            return\n", ""),
    "mutex-ex-argmax": ("the best pair updated without the lock",
                        "if lock(mutex, 0, max_spins):\n            v, j",
                        "if True:\n            v, j"),
    "mutex-ex-bins": ("no lock: a non-atomic update", "if lock(locks, k, max_spins):",
                      "if True:"),
    "streams-ex-one-stream": ("the copy out on another stream, unordered after the kernel",
                              "d_out.copy_to_host(out, stream=stream)",
                              "d_out.copy_to_host(out, stream=cuda.stream())"),
    "streams-ex-chunked": ("the popular version: every chunk in the same device buffers",
                           "d_a[lo:hi].copy_to_device(a[lo:hi], stream=s)",
                           "d_a[:hi - lo].copy_to_device(a[lo:hi], stream=s)",
                           "d_b[lo:hi].copy_to_device(b[lo:hi], stream=s)",
                           "d_b[:hi - lo].copy_to_device(b[lo:hi], stream=s)",
                           "_add(d_a[lo:hi], d_b[lo:hi], d_out[lo:hi], s)",
                           "_add(d_a[:hi - lo], d_b[:hi - lo], d_out[:hi - lo], s)",
                           "d_out[lo:hi].copy_to_host(out[lo:hi], stream=s)",
                           "d_out[:hi - lo].copy_to_host(out[lo:hi], stream=s)"),
    "streams-ex-bounded": ("every stream reuses the first stream's buffers",
                           "s, d_a, d_b, d_out = lanes[i % len(lanes)]",
                           "s, (d_a, d_b, d_out) = lanes[i % len(lanes)][0], lanes[0][1:]"),
    "cooperative-ex-rotate": ("a block barrier where the grid must wait",
                              "        grid.sync()  # the next row", "        cuda.syncthreads()  #"),
    "cooperative-ex-normalize": ("a block barrier where the grid must wait",
                                 "    grid.sync()  # every thread's atomic is done",
                                 "    cuda.syncthreads()  #"),
    "cooperative-ex-converge": ("a block barrier where the grid must wait",
                                "        grid.sync()\n        src = dst",
                                "        cuda.syncthreads()\n        src = dst"),
    "matmul-ex-transpose": ("missing syncthreads between the tile's writes and reads",
                            "        tile[ty, tx] = a[row, col]  # coalesced read along a row of a\n"
                            "    cuda.syncthreads()\n",
                            "        tile[ty, tx] = a[row, col]  # coalesced read along a row of a\n"),
    "matmul-ex-matvec": ("no barrier before the next chunk overwrites this one",
                         "        cuda.syncthreads()  # everyone is done with it", "        #"),
}

HOST_ONLY = '''\
import numpy as np


class HostKernel:
    """Looks like a kernel (kernel[blocks, threads](...)) but computes with NumPy."""

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, launch):
        return self.fn


def _saxpy(a, x, y, out):
    out[:] = a * x + y


def _clip(x, lo, hi, out):
    out[:] = np.clip(x, lo, hi)


def _reverse(x):
    x[:] = x[::-1].copy()


def _rotate(m):
    for r in range(1, m.shape[0]):
        m[r] = np.roll(m[r - 1], -1)


def _normalize(x, out, peak):
    out[:] = x / x.max()


def _transpose(a, out):
    out[:] = a.T


def _matvec(a, x, y):
    y[:] = a.astype(np.float64) @ x


saxpy_kernel = HostKernel(_saxpy)
clip_2d_kernel = HostKernel(_clip)
reverse_inplace_kernel = HostKernel(_reverse)
rotate_rows_kernel = HostKernel(_rotate)
normalize_by_max_kernel = HostKernel(_normalize)
transpose_tiled_kernel = HostKernel(_transpose)
matvec_tiled_kernel = HostKernel(_matvec)


def histogram_256(data):
    return np.bincount(data, minlength=256)


def word_length_histogram(data):
    letter = ((data >= 65) & (data <= 90)) | ((data >= 97) & (data <= 122))
    edges = np.diff(np.concatenate(([0], letter.astype(np.int8), [0])))
    lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    return np.bincount(np.minimum(lengths, 31), minlength=32)


def positions_of(data, value):
    return np.flatnonzero(data == value)


def mean_variance(x, blocks):
    return np.array([x.mean(dtype=np.float64), x.var(dtype=np.float64)])


def argmax(x, blocks):
    return np.argmax(x)


def kahan_sum(x, blocks):
    import math
    return math.fsum(x)


def topk(x, blocks):
    return np.sort(x)[::-1][:10]


def sum_positive(x):
    return x[x > 0].sum()


def my_argmax(x):
    return x.max(), int(np.argmax(x))


def my_bin_product(keys, values, nbins):
    out = np.ones(nbins)
    np.multiply.at(out, keys, values.astype(np.float64))
    return out


def stream_add(a, b, out, stream):
    out[:] = a + b


def chunked_streams_add(a, b, out, chunks):
    out[:] = a + b


def bounded_streams_add(a, b, out, chunks, streams):
    out[:] = a + b


def jacobi_until_converged(u, tol, max_steps):
    v = u.copy()
    for sweep in range(1, max_steps + 1):
        new = v.copy()
        new[1:-1] = (v[:-2] + v[2:]) * 0.5
        change = np.abs(new - v).max()
        v = new
        if change < tol:
            return v, sweep
    return v, max_steps


def choose_tile(shared_bytes, max_threads):  # a host computation: the right answer
    tile = 1
    while 8 * (2 * tile) ** 2 <= shared_bytes and (2 * tile) ** 2 <= max_threads:
        tile *= 2
    return tile
'''

# What a host-only answer earns: choose_tile is a host computation, the rest need kernels
HOST_ONLY_PASSES = {"matmul-ex-choose-tile"}


def code_cell(source, tags=()):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": source}
    if tags:
        cell["metadata"]["tags"] = list(tags)
    return cell


def notebook(cells, chapter=None):
    """A notebook (nbformat 4) of code cells; `chapter` sets generated_from."""
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    if chapter:
        metadata["generated_from"] = f"{chapter}.md"
    return {"cells": [c if isinstance(c, dict) else code_cell(c) for c in cells],
            "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def write(nb, path):
    pathlib.Path(path).write_text(json.dumps(nb, indent=1))
    return pathlib.Path(path)


def topic(label):
    return registry.EXERCISES[label].topic


def solution_source(topic_name, changes=()):
    text = (SOLUTIONS / f"{topic_name}.py").read_text()
    for old, new in changes:
        assert text.count(old) == 1, (topic_name, old)
        text = text.replace(old, new)
    return text


def module_cell(topic_name, source, labels):
    """A cell that runs `source` as the student's module answers_<topic> and takes the
    exercises' names from it."""
    filename = f"<answers_{topic_name}>"
    lines = ["import linecache", "import sys", "import types", "",
             f"_answers = types.ModuleType('answers_{topic_name}')",
             "sys.modules[_answers.__name__] = _answers",
             f"_source = {source!r}",
             "# its source findable, as a notebook cell's is, for tracebacks and the",
             "# tracer's messages",
             f"linecache.cache[{filename!r}] = (len(_source), None, "
             f"_source.splitlines(True), {filename!r})",
             f"exec(compile(_source, {filename!r}, 'exec'), _answers.__dict__)"]
    for label in labels:
        name = registry.EXERCISES[label].names[0]
        lines.append(f"{name} = _answers.{SOLVED_BY.get(label, name)}")
    return "\n".join(lines)


PASTED = ("gridstride", "cooperative", "matmul")  # topics whose exercises ask for kernels


def pasted_cell(topic_name, source, labels):
    """The statements of `source` that the exercises' names need, pasted as a cell, as
    a student who copied the answer into the notebook would (kernels are checked that
    way: their definitions may run no code but Numba's, kernels.grading.extract)."""
    from kernels.grading import extract

    found, _ = extract.statements([{"cell_type": "code", "source": source}])
    names = [registry.EXERCISES[label].names[0] for label in labels]
    assert not any(label in SOLVED_BY for label in labels)
    return "\n\n".join(ast.unparse(s.node) for s in extract.needed(found, names)) + "\n"


def answer_cell(topic_name, source, labels):
    maker = pasted_cell if topic_name in PASTED else module_cell
    return maker(topic_name, source, labels)


def _by_topic(labels):
    topics = {}
    for label in labels:
        topics.setdefault(topic(label), []).append(label)
    return topics


def correct_notebook():
    return notebook([answer_cell(t, solution_source(t), labels)
                     for t, labels in _by_topic(registry.EXERCISES).items()])


def bug_changes(label, bugs=BUGS):
    """[(text in the solution, its replacement), ...] that plant exercise `label`'s bug."""
    entry = bugs[label]
    return list(zip(entry[1::2], entry[2::2]))


def buggy_notebook(bugs=BUGS):
    """One cell per exercise: its topic's solution with that exercise's bug."""
    return notebook([answer_cell(topic(label), solution_source(topic(label),
                                                               bug_changes(label, bugs)),
                                 [label]) for label in bugs])


def host_only_notebook():
    return notebook([HOST_ONLY])


EXERCISE_CELL = re.compile(r"^```\{exercise\}[^\n]*\n:label: (\S+)\n.*?^```\{code-cell\} ipython3\n"
                           r"(.*?)^```$", re.M | re.S)


def placeholders():
    """{label: the code cell the book gives under the exercise}, in book order."""
    found = {}
    for chapter in dict.fromkeys(ex.chapter for ex in registry.EXERCISES.values()):
        text = (ROOT / "book" / f"{chapter}.md").read_text()
        for block in re.split(r"(?=^```\{exercise\})", text, flags=re.M):
            m = EXERCISE_CELL.match(block)
            if m:
                found[m[1]] = m[2]
    return found


def empty_notebook():
    """The book's placeholders for every exercise, after the imports the chapters make."""
    imports = ("import numpy as np\nfrom numba import cuda\n\n"
               "from kernels import checks, mutex")
    return notebook([imports, *placeholders().values()])
