"""Mutants of the reference solutions: each a wrong answer made by a mistake students make.

For every exercise of the registry, the functions its reference answer runs (the answer
itself and, transitively, the functions and kernels of its solution module that it
names) are parsed, and each operator below changes one place in them (an operator marked
`together` changes every place at once: one mistake made throughout). A mutant is one
student's answer: its topic's solution module so changed, pasted into a notebook as
tests/planted.py pastes the correct one. A few mistakes no operator can make from the
solution's text (a naive kernel without the shared tile, a host loop of launches
without the grid barrier) are whole functions written as a student would (HAND).

tests/mutation_runs.py grades them through the real grader; EQUIVALENT names the mutants
that are still correct answers, each with why.
"""

import ast
import copy
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
REMOVE = object()  # an operator's change that deletes the statement
CONSTRUCTORS = {"np.zeros", "np.ones", "np.full", "np.empty", "np.array", "cuda.device_array",
                "cuda.shared.array", "cuda.local.array", "cuda.pinned_array"}
WIDE_INTS = {"np.int32", "np.int64", "int32", "int64"}
ATOMIC_PLAIN = {"cuda.atomic.add": "{old} + ({v})", "cuda.atomic.max": "max({old}, {v})",
                "cuda.atomic.min": "min({old}, {v})"}


def dotted(node):
    """'cuda.atomic.add' for the expression cuda.atomic.add; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def calls(node, name):
    return isinstance(node, ast.Call) and dotted(node.func) == name


def statement(node, name):
    """True if `node` is the statement `name(...)` (or, with name '.sync', any x.sync())."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    if name.startswith("."):
        func = node.value.func
        return isinstance(func, ast.Attribute) and func.attr == name[1:] \
            and not node.value.args
    return calls(node.value, name)


def is_barrier(node):
    return statement(node, "cuda.syncthreads") or statement(node, ".sync")


def parsed(text):
    return ast.parse(text).body


def expression(text):
    return ast.parse(text, mode="eval").body


# ------------------------------------------------------------------ the operators
# Each: change(node, context) -> a replacement (a node, a list of statements, or REMOVE)
# where the operator applies to `node`, else None. `context` describes the function.


def barrier_removed(node, context):
    return REMOVE if statement(node, "cuda.syncthreads") else None


def grid_barrier_removed(node, context):
    return REMOVE if statement(node, ".sync") else None


def grid_barrier_to_block(node, context):
    return parsed("cuda.syncthreads()")[0] if statement(node, ".sync") else None


def barrier_in_branch(node, context):
    """The barrier moved into the end of the `if` just before it: threads that skip the
    branch skip the barrier."""
    body = getattr(node, "body", None)
    if not isinstance(body, list):
        return None
    for i in range(1, len(body)):
        if is_barrier(body[i]) and isinstance(body[i - 1], ast.If):
            new = copy.deepcopy(node)
            new.body[i - 1].body.append(new.body.pop(i))
            return new
    return None


def atomic_to_plain(node, context):
    """cuda.atomic.add(a, i, v) as a plain read-modify-write (max and min alike)."""
    value = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
    if not (isinstance(value, ast.Call) and dotted(value.func) in ATOMIC_PLAIN
            and len(value.args) == 3):
        return None
    a, i, v = map(ast.unparse, value.args)
    template = ATOMIC_PLAIN[dotted(value.func)]
    if isinstance(node, ast.Expr):
        return parsed(f"{a}[{i}] = {template.format(old=f'{a}[{i}]', v=v)}")
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        old = node.targets[0].id
        return parsed(f"{old} = {a}[{i}]\n{a}[{i}] = {template.format(old=old, v=v)}")
    return None


def stride_of_block(node, context):
    if calls(node, "cuda.gridsize") and node.args and isinstance(node.args[0], ast.Constant):
        return expression("cuda.blockDim.x" if node.args[0].value == 1 else
                          "(cuda.blockDim.x, cuda.blockDim.y)")
    return None


def stride_none(node, context):
    """range(start, n, stride) over the grid as range(start, min(start + 1, n)): one
    element per thread, as if the grid covered the data."""
    if calls(node, "range") and len(node.args) == 3 and (
            calls(node.args[2], "cuda.gridsize")
            or isinstance(node.args[2], ast.Name) and node.args[2].id in context["strides"]):
        start, stop = map(ast.unparse, node.args[:2])
        return expression(f"range({start}, min({start} + 1, {stop}))")
    return None


FLIPPED = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


def bound_flipped(node, context):
    """A comparison in a test off by one: < as <=, ... (`while` tests against a
    literal are left alone: `while half >= 0` never ends)."""
    if isinstance(node, ast.Compare) and id(node) in context["tests"] and len(node.ops) == 1 \
            and type(node.ops[0]) in FLIPPED:
        new = copy.deepcopy(node)
        new.ops = [FLIPPED[type(node.ops[0])]()]
        return new
    return None


def range_stop_short(node, context):
    """A loop's end one short: range(..., n) as range(..., n - 1)."""
    if calls(node, "range") and node.args and not isinstance(
            node.args[min(1, len(node.args) - 1)], ast.Constant):
        new = copy.deepcopy(node)
        stop = min(1, len(node.args) - 1)
        new.args[stop] = expression(f"({ast.unparse(node.args[stop])}) - 1")
        return new
    return None


def indices_swapped(node, context):
    """a[i, j] as a[j, i]; col, row = cuda.grid(2) as row, col."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) \
            and len(node.slice.elts) == 2 and not any(
                isinstance(e, ast.Slice) for e in node.slice.elts) \
            and ast.dump(node.slice.elts[0]) != ast.dump(node.slice.elts[1]):
        new = copy.deepcopy(node)
        new.slice.elts.reverse()
        return new
    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], ast.Tuple) and len(node.targets[0].elts) == 2 \
            and (calls(node.value, "cuda.grid") or calls(node.value, "cuda.gridsize")):
        new = copy.deepcopy(node)
        new.targets[0].elts.reverse()
        return new
    return None


def shared_to_local(node, context):
    """The block's shared array made each thread's own (local) array."""
    if calls(node, "cuda.shared.array"):
        new = copy.deepcopy(node)
        new.func = expression("cuda.local.array")
        return new
    return None


def sync_removed(node, context):
    """A wait for a stream (or an event, or the device) left out."""
    return REMOVE if statement(node, ".synchronize") or statement(node, ".wait") \
        or statement(node, "cuda.synchronize") else None


def stream_dropped(node, context):
    """One step off the stream it was given: a copy without its stream=, or a launch
    without its stream (both then run on the default stream)."""
    if isinstance(node, ast.Call) and any(k.arg == "stream" for k in node.keywords):
        new = copy.deepcopy(node)
        new.keywords = [k for k in new.keywords if k.arg != "stream"]
        return new
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
            and node.value.id in context["kernels"] and isinstance(node.slice, ast.Tuple) \
            and len(node.slice.elts) == 3:
        new = copy.deepcopy(node)
        new.slice.elts.pop()
        return new
    return None


def one_buffer(node, context):
    """Each chunk's slice buffer[lo:hi] as buffer[:hi - lo]: every stream's chunk in
    the same device memory."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
            and node.value.id.startswith("d_") and isinstance(node.slice, ast.Slice) \
            and node.slice.lower is not None and node.slice.upper is not None:
        lo, hi = ast.unparse(node.slice.lower), ast.unparse(node.slice.upper)
        return expression(f"{node.value.id}[:{hi} - {lo}]")
    return None


def fence_removed(node, context):
    return REMOVE if any(statement(node, f"cuda.threadfence{s}")
                         for s in ("", "_block", "_system")) else None


def lock_removed(node, context):
    """`if lock(...)` as `if True` (and `if not lock(...)` as `if False`): the guarded
    update made without the lock."""
    if not isinstance(node, ast.If):
        return None
    test = node.test
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if negated else test
    if isinstance(call, ast.Call) and dotted(call.func) in context["locks"]:
        new = copy.deepcopy(node)
        new.test = ast.Constant(not negated)
        return new
    return None


def unlock_removed(node, context):
    return REMOVE if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
        and dotted(node.value.func) in context["unlocks"] else None


class _Narrowed(ast.NodeTransformer):
    def visit_Name(self, node):
        return expression("np.int16") if node.id in WIDE_INTS else node

    def visit_Attribute(self, node):
        return expression("np.int16") if dotted(node) in WIDE_INTS else node


def narrow_int(node, context):
    """An array of int32 or int64 (counts, indices, slots) made int16."""
    if isinstance(node, ast.Call) and dotted(node.func) in CONSTRUCTORS and any(
            dotted(arg) in WIDE_INTS for arg in [*node.args, *(k.value for k in node.keywords)]):
        return _Narrowed().visit(copy.deepcopy(node))
    return None


# name -> (change, what the student got wrong, together: every place at once)
OPERATORS = {
    "barrier-removed": (barrier_removed, "a cuda.syncthreads() left out", False),
    "barrier-in-branch": (barrier_in_branch, "the barrier moved into the branch before it",
                          False),
    "grid-barrier-removed": (grid_barrier_removed, "the grid barrier left out", False),
    "grid-sync-as-syncthreads": (grid_barrier_to_block,
                                 "grid.sync() replaced by cuda.syncthreads()", False),
    "atomic-as-plain": (atomic_to_plain, "an atomic made a plain read-modify-write", False),
    "stride-of-block": (stride_of_block, "the grid stride replaced by the block's", False),
    "stride-none": (stride_none, "no grid stride: one element per thread", False),
    "bound-flipped": (bound_flipped, "a bound off by one (< for <=, > for >=, ...)", False),
    "range-short": (range_stop_short, "a loop that stops one short", False),
    "indices-swapped": (indices_swapped, "two indices swapped", False),
    "shared-as-local": (shared_to_local, "the shared array made a per-thread array", False),
    "sync-removed": (sync_removed, "a wait for a stream left out", False),
    "stream-dropped": (stream_dropped, "a step off the given stream (default stream)",
                       False),
    "one-buffer": (one_buffer, "one device buffer shared by every stream's chunk", True),
    "fence-removed": (fence_removed, "a memory fence of the lock left out", False),
    "lock-removed": (lock_removed, "the update made without taking the lock", False),
    "unlock-removed": (unlock_removed, "the lock never released", False),
    "int16": (narrow_int, "counts or indices kept in 16 bits", False),
}

# ------------------------------------------------------------------ applying them


def context_of(tree):
    """What the operators need to know of a module: its kernels, its locks (functions
    that compare-and-swap), unlocks (that exchange), each function's stride names, and
    which comparisons are tests of an `if`."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def uses(fn, name):
        return any(calls(n, name) for n in ast.walk(fn))

    strides, tests = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and calls(node.value, "cuda.gridsize"):
            for target in node.targets:
                strides |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if isinstance(node, (ast.If, ast.IfExp)):
            tests |= {id(n) for n in ast.walk(node.test) if isinstance(n, ast.Compare)}
        if isinstance(node, ast.While):  # a bound, not a countdown to a literal (a hang)
            tests |= {id(n) for n in ast.walk(node.test) if isinstance(n, ast.Compare)
                      and not isinstance(n.comparators[-1], ast.Constant)}
    return {"functions": functions, "strides": strides, "tests": tests,
            "kernels": {name for name, fn in functions.items()
                        if any(dotted(d).startswith("cuda.jit") or calls(d, "cuda.jit")
                               for d in fn.decorator_list)},
            "locks": {name for name, fn in functions.items() if uses(fn, "cuda.atomic.cas")},
            "unlocks": {name for name, fn in functions.items()
                        if uses(fn, "cuda.atomic.exch")}}


class Apply(ast.NodeTransformer):
    """Applies `change` at its site number `k` (every site with k None); counts sites."""

    def __init__(self, change, context, k):
        self.change, self.context, self.k, self.sites = change, context, k, 0

    def visit(self, node):
        new = self.change(node, self.context)
        if new is not None:
            self.sites += 1
            if self.k is None or self.sites - 1 == self.k:
                return None if new is REMOVE else new
        return self.generic_visit(node)


def _filled(tree):
    """Bodies left empty by a removal hold `pass`."""
    for node in ast.walk(tree):
        if isinstance(getattr(node, "body", None), list) and not node.body:
            node.body = [ast.Pass()]
    return ast.fix_missing_locations(tree)


def mutated(source, function, change, k):
    """(the module `source` with `change` applied at site k of `function`, sites found)."""
    tree = ast.parse(source)
    apply = Apply(change, context_of(tree), k)
    target = context_of(tree)["functions"][function]
    index = tree.body.index(target)
    tree.body[index] = apply.visit(target)
    return ast.unparse(_filled(tree)), apply.sites


def scope(source, name):
    """The module's functions that `name` runs: itself and, transitively, each module
    function it names (kernels it launches, device functions, helpers)."""
    functions = context_of(ast.parse(source))["functions"]
    found, todo = [], [name]
    while todo:
        current = todo.pop(0)
        if current in found:
            continue
        found.append(current)
        todo += [n.id for n in ast.walk(functions[current])
                 if isinstance(n, ast.Name) and n.id in functions and n.id not in found]
    return found
