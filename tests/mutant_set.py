"""The mutants of the course's reference solutions, every exercise's, by name.

`all_mutants()` applies every operator of tests/mutants.py at every place it fits in
the functions each exercise's answer runs, adds the mistakes written by hand (HAND),
an index packed into 16 bits where the solution packs one (packed_in_16_bits) and,
for host functions, answers looked up from the checker's public cases (looked_up).
EQUIVALENT lists the mutants that are still right, each with why.
"""

import ast
import dataclasses
import hashlib
import textwrap
import unittest.mock

import mutants
import planted
from kernels.checks import registry

# The course helpers a solution imports, pasted into it as a student who wrote their
# own would: the lock's fences and atomics are then the answer's, and can be mutated.
INLINED = {"mutex": ("kernels/locks.py", "kernels.locks", ("lock", "unlock"))}


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str  # <label>:<operator>@<function>[#site]
    label: str
    operator: str
    why: str  # the mistake, in words
    source: str  # the whole solution module, changed
    identity: str = ""  # what the digest is of, where not the source (a looked-up table's
    # keys follow the checker's public cases: a new case is the same mistake)

    @property
    def digest(self):
        return hashlib.sha256((self.identity or self.source).encode()).hexdigest()[:16]


def solution(topic):
    """The topic's solution module, with the helpers of INLINED pasted in."""
    text = planted.solution_source(topic)
    if topic in INLINED:
        path, module, names = INLINED[topic]
        pasted = [ast.unparse(n) for n in ast.parse((mutants.ROOT / path).read_text()).body
                  if isinstance(n, ast.FunctionDef) and n.name in names]
        tree = ast.parse(text)
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == module:
                node.names = [a for a in node.names if a.name not in names]
        text = ast.unparse(tree) + "\n\n\n" + "\n\n\n".join(pasted)
    return ast.unparse(ast.parse(text))  # comments dropped, as in every mutant


def answer_name(label):
    return planted.SOLVED_BY.get(label, registry.EXERCISES[label].names[0])


# label -> [(name, the mistake, {function: its new source} or [(old text, new text)])]
HAND = {
    "atomics-ex-256": [("global-counters", "every count an atomic on the global histogram: "
                        "no shared-memory counters", {"histogram_256_kernel": '''
@cuda.jit
def histogram_256_kernel(data, hist):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(hist, data[i], 1)
'''})],
    "mutex-ex-argmax": [("ties-by-lock-order", "the blocks' maxima merged with '>' "
                         "alone: a tie between blocks goes to whichever block takes the "
                         "lock first", {
                             "argmax_mutex_kernel": '''
@cuda.jit
def argmax_mutex_kernel(x, best_value, best_index, mutex, failed, max_spins):
    s_value = cuda.shared.array(MAX_THREADS, float32)
    s_index = cuda.shared.array(MAX_THREADS, int64)
    tid = cuda.threadIdx.x
    value = -math.inf
    index = x.size  # larger than any index: loses every tie
    # Indices only grow along the loop, so '>' keeps the first of equal values; the
    # first one seen is taken whatever it is (all -inf has a largest value too).
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > value or index == x.size:
            value = x[i]
            index = i
    s_value[tid] = value
    s_index[tid] = index
    cuda.syncthreads()
    i = cuda.blockDim.x // 2
    while i > 0:
        if tid < i:
            v, j = s_value[tid + i], s_index[tid + i]
            if v > s_value[tid] or (v == s_value[tid] and j < s_index[tid]):
                s_value[tid] = v
                s_index[tid] = j
        cuda.syncthreads()
        i //= 2
    if tid == 0:
        # Two words change together: no single atomic can do this, a lock can.
        if lock(mutex, 0, max_spins):
            v, j = s_value[0], s_index[0]
            if v > best_value[0]:  # a tie goes to the block that took the lock first
                best_value[0] = v
                best_index[0] = j
            unlock(mutex, 0)
        else:
            failed[0] = 1
'''})],
    "matmul-ex-transpose": [("naive", "each thread copies one element: no shared tile",
                             {"transpose_tiled_kernel": '''
@cuda.jit
def transpose_tiled_kernel(a, out):
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]
'''})],
    "matmul-ex-matvec": [("naive", "each thread reads x from global memory: no shared "
                          "chunk", {"matvec_tiled_kernel": '''
@cuda.jit
def matvec_tiled_kernel(a, x, y):
    row = cuda.grid(1)
    if row < a.shape[0]:
        acc = float32(0.0)
        for j in range(x.size):
            acc += a[row, j] * x[j]
        y[row] = acc
'''})],
    "cooperative-ex-converge": [("host-loop", "one launch per sweep, the host loop in "
                                 "place of the grid barrier", {"sweep_kernel": '''
@cuda.jit
def sweep_kernel(src, dst, change):
    i = cuda.grid(1)
    n = src.size
    if i < n:
        if i == 0 or i == n - 1:
            value = src[i]
        else:
            value = (src[i - 1] + src[i + 1]) * 0.5
        cuda.atomic.max(change, 0, abs(value - src[i]))
        dst[i] = value
''', "jacobi_until_converged": '''
def jacobi_until_converged(u, tol, max_steps, *, threads=256):
    src = cuda.to_device(u)
    dst = cuda.device_array_like(src)
    sweeps = 0
    for _ in range(max_steps):
        change = cuda.to_device(np.zeros(1))
        sweep_kernel[(u.size + threads - 1) // threads, threads](src, dst, change)
        src, dst = dst, src
        sweeps += 1
        if change.copy_to_host()[0] < tol:
            break
    return src.copy_to_host(), sweeps
'''})],
    "streams-ex-one-stream": [("own-stream", "the work on a stream of its own, not the "
                               "one given", [("d_a = cuda.to_device(a, stream=stream)",
                                              "stream = cuda.stream()\n    "
                                              "d_a = cuda.to_device(a, stream=stream)")]),
                              ("event-not-waited", "an event recorded after the copy out, "
                               "never waited for", [("stream.synchronize()",
                                                     "done = cuda.event()\n    "
                                                     "done.record(stream)")])],
    "streams-ex-chunked": [("events-not-waited", "an event recorded on each stream, none "
                            "waited for", [("for s in streams:\n        s.synchronize()",
                                            "for s in streams:\n        "
                                            "cuda.event().record(s)")])],
    "streams-ex-bounded": [("lane-zero-buffers", "every stream reuses the first stream's "
                            "buffers", [("s, d_a, d_b, d_out = lanes[i % len(lanes)]",
                                         "s, (d_a, d_b, d_out) = lanes[i % len(lanes)][0], "
                                         "lanes[0][1:]")])],
}


def _by_hand(source, change):
    if isinstance(change, list):
        for old, new in change:
            assert source.count(old) == 1, old
            source = source.replace(old, new)
        return source
    tree = ast.parse(source)
    for name, text in change.items():
        new = ast.parse(textwrap.dedent(text)).body[0]
        index = next((i for i, n in enumerate(tree.body)
                      if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if index is None:
            tree.body.append(new)
        else:
            tree.body[index] = new
    return ast.unparse(tree)


def packed_in_16_bits(source, functions):
    """A (value, index) key packed with 16 bits for the index where the solution gives
    it 32: right until an index reaches 65,536. None where nothing is packed."""
    tree = ast.parse(source)
    shifts = [n for f in functions for n in ast.walk(f)
              if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.LShift, ast.RShift))
              and isinstance(n.right, ast.Constant) and n.right.value == 32]
    if not shifts:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == 0xFFFFFFFF:
            node.value = 0xFFFF
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.RShift)) \
                and isinstance(node.right, ast.Constant) and node.right.value == 32:
            node.right.value = 16
    return ast.unparse(tree)


KEY = '''
def _key(value):
    import hashlib
    import numpy
    value = numpy.asarray(value)
    return hashlib.sha256(str((value.dtype, value.shape)).encode()
                          + numpy.ascontiguousarray(value).tobytes()).hexdigest()
'''


def public_keys(label):
    """The keys (KEY) of the first input of every call the exercise's checker makes, as
    a reader runs it in a notebook (no grading secret): what a student could have seen
    and stored. The calls are recorded, not run."""
    from kernels import checks
    from kernels.checks import core

    scope = {}
    exec(KEY, scope)
    seen = set()

    class Recorder(core.Elsewhere):
        def run(self, name, args):
            stack = list(args)
            while stack:
                value = stack.pop(0)
                if isinstance(value, (tuple, list)):
                    stack[:0] = list(value)
                elif hasattr(value, "dtype") or isinstance(value, (int, float)):
                    seen.add(scope["_key"](value))
                    break
            raise RuntimeError("recorded, not run")

    # the race case runs last, as on a GPU, so that every case is recorded
    with unittest.mock.patch.object(core, "SIMULATOR", False), \
            unittest.mock.patch.object(core, "SECRET", None):
        try:
            getattr(checks, registry.EXERCISES[label].check_name)(Recorder())
        except RuntimeError:  # the race case, last, does not catch what its call raised
            pass
    return sorted(seen)


def looked_up(source, label):
    """The answer with a table of the checker's public cases: right on those inputs,
    and a KeyError on any other, as a table of stored answers would give."""
    name = answer_name(label)
    return source + textwrap.dedent(f'''


        _PUBLIC = frozenset({public_keys(label)!r})
        _computed = {name}
        {textwrap.indent(KEY, "        ").strip()}


        def {name}(*args, **kwargs):
            if _key(args[0]) not in _PUBLIC:
                raise KeyError("no stored answer for this input")
            return _computed(*args, **kwargs)
        ''')


def of_exercise(label, lookups=True):
    """The mutants of exercise `label`'s reference solution, in a fixed order."""
    topic = planted.topic(label)
    source = solution(topic)
    functions = mutants.context_of(ast.parse(source))["functions"]
    inside = mutants.scope(source, answer_name(label))
    found, seen = [], {source}

    def add(name, operator, why, text, identity=""):
        if text is not None and text not in seen:
            seen.add(text)
            found.append(Mutant(f"{label}:{name}", label, operator, why, text, identity))

    for operator, (change, why, together) in mutants.OPERATORS.items():
        for function in inside:
            _, sites = mutants.mutated(source, function, change, -1)
            if sites and together:
                add(f"{operator}@{function}", operator, why,
                    mutants.mutated(source, function, change, None)[0])
            for k in range(sites if not together else 0):
                add(f"{operator}@{function}" + (f"#{k + 1}" if sites > 1 else ""),
                    operator, why, mutants.mutated(source, function, change, k)[0])
    add("index-16-bit", "index-16-bit", "an index packed into 16 bits",
        packed_in_16_bits(source, [functions[f] for f in inside]))
    for name, why, change in HAND.get(label, []):
        add(name, name, why, _by_hand(source, change))
    if lookups and not registry.EXERCISES[label].kernel:
        add("looked-up", "looked-up", "results looked up from the public cases",
            looked_up(source, label), identity=f"{source}\nlooked up: {label}")
    return found


def all_mutants(lookups=True):
    return [m for label in registry.EXERCISES for m in of_exercise(label, lookups)]


# Mutants that are still right answers, each with why (a GPU gives them full marks too)
ANY_LAUNCH = ("blocks and threads swapped in the launch: its loops stride by the grid (and "
              "the block), so any launch of up to 1,024 threads a block does every element "
              "once")
EVERY_BLOCK = ("each block scans the whole array (a block stride): every block finds the "
               "same maximum, so the result is right, the work done once per block")
SAME_ELEMENT = "equal value and equal index is the same element: it replaces itself"
DEFAULT_STREAM = ("this copy on the legacy default stream, not the chunk's: it waits for "
                  "every blocking stream's earlier work and later work waits for it, so the "
                  "result is right; the chunks no longer overlap")
EQUIVALENT = {
    "atomics-ex-256:indices-swapped@histogram_256": ANY_LAUNCH,
    "atomics-ex-words:indices-swapped@word_length_histogram": ANY_LAUNCH,
    "atomics-ex-positions:indices-swapped@positions_of": ANY_LAUNCH,
    "mutex-ex-bins:indices-swapped@bin_product": ANY_LAUNCH,
    "reduction-ex-argmax:stride-of-block@argmax_kernel": EVERY_BLOCK,
    "mutex-ex-argmax:stride-of-block@argmax_mutex_kernel": EVERY_BLOCK,
    "reduction-ex-topk:bound-flipped@topk_kernel#1": "a value equal to the last one kept "
    "takes its place (the list is sorted, so it moves no further): the same values",
    "reduction-ex-topk:bound-flipped@topk_kernel#2": "a value moves past equal ones: the "
    "list holds the same values",
    "reduction-ex-topk:bound-flipped@topk_kernel#4": "on a tie the merge takes the other "
    "list's equal value: the same values",
    "mutex-ex-deadlock:bound-flipped@sum_positive_kernel": "x >= 0 adds the zeros too: "
    "the same sum",
    "mutex-ex-deadlock:bound-flipped@lock": "one more try before a thread gives up",
    "mutex-ex-argmax:bound-flipped@lock": "one more try before a thread gives up",
    "mutex-ex-bins:bound-flipped@lock": "one more try before a thread gives up",
    "mutex-ex-argmax:bound-flipped@argmax_mutex_kernel#4": SAME_ELEMENT,
    "mutex-ex-argmax:bound-flipped@argmax_mutex_kernel#6": SAME_ELEMENT,
    "mutex-ex-argmax:int16@argmax_mutex#3": "the failure flag (0 or 1), stored plainly, "
    "fits 16 bits",
    "mutex-ex-bins:int16@bin_product#2": "the failure flag (0 or 1), stored plainly, fits "
    "16 bits",
    "streams-ex-chunked:stream-dropped@chunked_streams_add#1": DEFAULT_STREAM,
    "streams-ex-chunked:stream-dropped@chunked_streams_add#2": DEFAULT_STREAM,
    "streams-ex-chunked:stream-dropped@chunked_streams_add#3": DEFAULT_STREAM,
    "streams-ex-bounded:stream-dropped@bounded_streams_add#1": DEFAULT_STREAM,
    "streams-ex-bounded:stream-dropped@bounded_streams_add#2": DEFAULT_STREAM,
    "streams-ex-bounded:stream-dropped@bounded_streams_add#3": DEFAULT_STREAM,
    "streams-ex-one-stream:stream-dropped@stream_add#3": "the output allocated without "
    "stream=: an allocation queues no work on any stream",
    "cooperative-ex-converge:range-short@jacobi_until_converged_kernel#3": "the final copy "
    "skips the last point, a boundary that the first sweep wrote into out and no sweep "
    "changes",
}
