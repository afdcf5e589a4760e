"""What an exercise's answer needs from a notebook, and nothing else of it.

The grader calls a student's functions in a fresh process (kernels.grading.answers),
not in the process that ran the notebook, so that what the notebook did at top level
(patched modules, threads, profile hooks, handlers, a cell full of tricks) is not
there. That process runs only the top-level statements the exercise's functions need,
found from the notebook's code: starting from the names the exercise asks for, a
statement is kept if it binds a needed name (an import, a def or class, an
assignment, or a compound statement such as ``if`` or ``try`` that binds one inside),
or if it changes an object a needed name holds (an assignment into ``table[i]`` or
``module.attr``, a method called on it, or a call that is handed it, such as
``exec(code, module.__dict__)``); every name a kept statement reads is needed in turn.
Calls of a needed function (``saxpy_kernel[4, 64](...)``, ``histogram_256(text)``) are
the notebook's own tries, and are not kept. The kept statements run in notebook order,
each on its own, so one that fails does not stop the next. An import of several names
counts as one import per name (the chapter's `from kernels import checks, streams` runs
as `from kernels import streams` for an answer that uses streams alone), and a name read
as `globals()["name"]` is needed as a name read plainly.
"""

import ast
import collections
import dataclasses
import symtable

from kernels import notebook_cells


@dataclasses.dataclass
class Statement:
    node: ast.stmt
    cell: int  # code cell number, from 1
    binds: set
    reads: set
    changes: set  # names whose objects the statement may change without rebinding them
    assigns: set  # of those, the names it assigns into (table[i] = v, obj.attr = v)


def _names_loaded(node):
    """The global names a top-level statement reads when it runs or when the functions
    it defines run (a function's own locals and parameters are not globals: Python's
    symbol tables say which is which)."""
    table = symtable.symtable(ast.unparse(node), "<statement>", "exec")
    found = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    tables = list(table.get_children())
    while tables:
        t = tables.pop()
        found |= {s.get_name() for s in t.get_symbols() if s.is_global()
                  and s.is_referenced()}
        tables.extend(t.get_children())
    return found


def _root(node):
    """The Name an attribute or subscript chain starts from (a.b[c].d -> a), or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _bound(node):
    """Names a top-level statement binds (in its own scope: not inside functions)."""
    found = set()

    def visit(n):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(n.name)
            return  # names inside bind in their own scope
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for alias in n.names:
                found.add("*" if alias.name == "*" else
                          alias.asname or alias.name.split(".")[0])
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            found.add(n.id)
        if isinstance(n, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp,
                          ast.DictComp)):
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return found


READ_ONLY_CALLS = {"print", "len", "repr", "str", "type", "isinstance", "id", "hash",
                   "format", "display"}  # builtins that change nothing they are handed


def _changed(node):
    """(names whose objects a statement may change in place: targets of item or attribute
    assignment and what is stored there, receivers of method calls, and names handed
    directly to a call; the first of these alone)."""
    found, assigned = set(), set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            for t in targets:
                for part in ast.walk(t):
                    if isinstance(part, (ast.Attribute, ast.Subscript)) and _root(part):
                        assigned.add(_root(part))
                        value = getattr(n, "value", None)  # stored into something
                        if isinstance(value, (ast.Name, ast.Attribute)) and _root(value):
                            found.add(_root(value))
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                            and n.func.id in READ_ONLY_CALLS):
            if isinstance(n.func, ast.Attribute) and _root(n.func):
                found.add(_root(n.func))
            for arg in [*n.args, *(k.value for k in n.keywords)]:
                if isinstance(arg, ast.Starred):
                    arg = arg.value
                if isinstance(arg, (ast.Name, ast.Attribute)) and _root(arg):
                    found.add(_root(arg))
    return found | assigned, assigned


def _one_import_each(body):
    """The statements of `body`, with an import that binds several names split into one
    import per name (`from kernels import checks, streams` -> two), so that an answer
    needs, runs and is judged by only the names its code uses: the chapter's import line
    binds modules that the answer never touches."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and len(node.names) > 1:
            for alias in node.names:
                yield ast.copy_location(
                    ast.Import(names=[alias]) if isinstance(node, ast.Import) else
                    ast.ImportFrom(module=node.module, names=[alias], level=node.level),
                    node)
        else:
            yield node


def _global_keys(node):
    """The global names read by name through `globals()["name"]` or
    `globals().get("name")` (a function whose parameter hides a module of the notebook
    reaches the module so): a statement so read is needed as a name read plainly is."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript):
            holder, key = n.value, n.slice
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr == "get" and n.args:
            holder, key = n.func.value, n.args[0]
        else:
            continue
        if isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and \
                holder.func.id == "globals" and isinstance(key, ast.Constant) and \
                isinstance(key.value, str):
            found.add(key.value)
    return found


def statements(cells):
    """The top-level statements of a notebook's code cells, as the grader runs them
    (IPython lines dropped, the set-up cell as `import kernels`, cells that do not
    parse or are tagged skip-execution left out), with the cells' sources
    ({cell number: code})."""
    found, sources = [], {}
    code_cells = [c for c in cells if c.get("cell_type") == "code"]
    for number, cell in enumerate(code_cells, 1):
        text = cell.get("source", "")
        text = text if isinstance(text, str) else "".join(map(str, text))
        if "skip-execution" in ((cell.get("metadata") or {}).get("tags") or []):
            continue
        if number == 1 and text.startswith(notebook_cells.SETUP_PREFIX):
            text = "import kernels"
        code, _ = notebook_cells.plain_python(text)
        if code is None:
            continue
        try:  # a cell Python would not compile (symbol tables find more than the parser)
            tree = ast.parse(code, f"<code cell {number}>")
            cell_statements = [Statement(node, number, _bound(node),
                                         _names_loaded(node) | _global_keys(node),
                                         *_changed(node))
                               for node in _one_import_each(tree.body)]
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        sources[number] = code
        found += cell_statements
    return found, sources


def _checker_call(node):
    """True for a statement that calls a checker (`print(checks.saxpy(saxpy_kernel))`,
    `report = checks.topk(topk)`): the notebook's own try, which the answer's process
    does not need (and where it would check nothing)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and dotted(n.func.value) in ("checks", "kernels.checks")
               for n in ast.walk(node))


def dotted(node):
    """The dotted name an attribute chain spells (a.b.c), or None if it does not start
    from a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


# Calls a constant may make: NumPy's number types and array makers, math's functions,
# and the types and signatures that Numba's names make.
NUMPY_MAKERS = {"array", "zeros", "ones", "full", "arange", "linspace", "empty", "dtype",
                "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                "uint16", "uint32", "uint64", "complex64", "complex128", "bool_",
                "iinfo", "finfo"}


def kernel_only(found, names):
    """"" if the statements that bind what `names` need (needed without changes: all
    that is run of a kernel's definition) only import, define functions (plain, or with
    Numba's jit decorators given plain values) and bind plain values, so that loading
    them runs no code of the student's but libraries' and function definitions, and no
    other statement of the notebook assigns into a value they read; else why not,
    naming the cell and line. `found`: the notebook's statements."""
    run = needed(found, names, changes=False)
    imported = set().union(*(r.binds for r in run
                             if isinstance(r.node, (ast.Import, ast.ImportFrom))))
    values = set().union(*(s.reads for s in run)) - set(names) - imported
    for s in found:  # what assigns into a value would not run: say so
        if s not in run and s.assigns & values:
            return (f"code cell {s.cell}, line {s.node.lineno}: it changes "
                    f"{', '.join(sorted(s.assigns & values))} in place")
    kept = run
    roots = {}  # name bound by an import -> module it names
    for s in kept:
        for node in ast.walk(s.node):
            if isinstance(node, ast.ImportFrom):
                roots.update({a.asname or a.name: f"{node.module}.{a.name}"
                              for a in node.names})
            elif isinstance(node, ast.Import):  # import numba.cuda binds numba
                roots.update({a.asname or a.name.split(".")[0]:
                              a.name if a.asname else a.name.split(".")[0]
                              for a in node.names})
    # a module's name that a definition or assignment rebinds names that, not the module
    rebound = set().union(*(s.binds for s in kept
                            if not isinstance(s.node, (ast.Import, ast.ImportFrom))))
    roots = {name: module for name, module in roots.items() if name not in rebound}
    check = _KernelOnly(roots, set().union(*(s.binds for s in kept)))
    # names bound once: to a signature's text (SIG = "void(int32[::1])"), or to Numba's
    # jit (jit = cuda.jit(fastmath=True)), which decorates as it does
    binds = collections.Counter(name for s in kept for name in s.binds)
    once = {name for name, count in binds.items() if count == 1}
    assigned = [(t.id, s.node.value) for s in kept if isinstance(s.node, ast.Assign)
                for t in s.node.targets if isinstance(t, ast.Name) and t.id in once]
    check.signatures = {name for name, value in assigned
                        if isinstance(value, ast.Constant) and isinstance(value.value, str)}
    check.aliases = {name for name, value in assigned if check.is_jit(value)}
    for s in kept:
        why = check.statement(s.node)
        if why:
            return f"code cell {s.cell}, line {s.node.lineno}: {why}"
    return ""


# Builtins that make a value and run nothing else, where the notebook does not rebind them
BUILTIN_MAKERS = {"float", "int", "bool", "complex", "abs", "min", "max", "round", "range",
                  "tuple", "len", "pow", "divmod", "slice"}


class _KernelOnly:
    """Whether statements run no code of the student's, given the names imports bind
    (roots: name -> module) and every name the kept statements bind."""

    def __init__(self, roots, bound):
        self.roots, self.bound = roots, bound
        self.aliases = set()  # names bound to Numba's jit (kernel_only)
        self.signatures = set()  # names bound to a signature's text (kernel_only)

    def statement(self, node):
        """Why `node` runs code of the student's, or ""."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):  # runs the libraries' code only
            return "a relative import" if getattr(node, "level", 0) else ""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                         *filter(None, (node.args.vararg, node.args.kwarg))]
            values = [*node.args.defaults, *node.args.kw_defaults, node.returns,
                      *(a.annotation for a in arguments)]
            # a decorator is called: Numba's jit only (a name of the student's would
            # run the student's function here)
            for expr in node.decorator_list:
                if not self.is_jit(expr):
                    return f"{node.name} is made by {ast.unparse(expr)[:60]}, not by cuda.jit"
            for expr in filter(None, values):
                if not self.plain(expr):
                    return f"{node.name} is made with {ast.unparse(expr)[:60]}"
            return ""
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(isinstance(t, (ast.Name, ast.Tuple)) for t in targets):
                return f"it assigns into {ast.unparse(targets[0])[:60]}"
            if node.value is not None and not self.plain(node.value):
                return f"it computes {ast.unparse(node.value)[:60]}"
            return ""
        if isinstance(node, (ast.If, ast.Try)):  # try: from numba import cuda ...
            tests = ([node.test] if isinstance(node, ast.If) else
                     [h.type for h in node.handlers if h.type is not None])
            if not all(self.plain(t) for t in tests):
                return f"it tests {ast.unparse(tests[0])[:60]}"
            body = [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                    *(n for h in getattr(node, "handlers", []) for n in h.body)]
            return next(filter(None, map(self.statement, body)), "")
        if isinstance(node, ast.Pass):
            return ""
        return f"a {type(node).__name__.lower()} statement runs code there"

    def module_of(self, expr):
        """The full dotted name `expr` names through the imports ("" if none)."""
        head, _, rest = (dotted(expr) or "").partition(".")
        module = self.roots.get(head, "")
        return f"{module}.{rest}" if module and rest else module

    def is_jit(self, expr):
        """Numba's jit as a decorator: cuda.jit, numba.cuda.jit, numba.njit, jit, or a
        name bound to one, bare or called with signatures and options only. Called with
        a function it makes a kernel (jit_made), which, called in turn, would run it."""
        if isinstance(expr, ast.Call):
            return (self._jit_name(expr.func) and all(map(self._signature, expr.args))
                    and all(self.plain(k.value) for k in expr.keywords))
        return self._jit_name(expr)

    def _jit_name(self, expr):
        return (self.module_of(expr) in ("numba.cuda.jit", "numba.jit", "numba.njit")
                or isinstance(expr, ast.Name) and expr.id in self.aliases)

    def jit_made(self, expr):
        """cuda.jit(f), cuda.jit(signature, ...)(f): a kernel made from a function, which
        runs nothing."""
        return (isinstance(expr, ast.Call) and self.is_jit(expr.func)
                and self.plain_arguments(expr))

    def _signature(self, expr):
        """A signature: its text, a name bound to its text, or Numba's types (the names
        imports bind), alone or in a list: never a function of the student's."""
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, str)
        if isinstance(expr, ast.Name):
            return expr.id in self.signatures or expr.id in self.roots
        if isinstance(expr, (ast.List, ast.Tuple)):
            return all(map(self._signature, expr.elts))
        return self.plain(expr) and all(n.id in self.roots for n in ast.walk(expr)
                                        if isinstance(n, ast.Name))

    def plain_arguments(self, call):
        return all(self.plain(a.value if isinstance(a, ast.Starred) else a)
                   for a in [*call.args, *(k.value for k in call.keywords)])

    def plain(self, expr):
        """A value that runs no code of the student's: literals, names, arithmetic, and
        calls of NumPy's makers, math's functions, Numba's types and jit, and builtins
        that make values."""
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, ast.Name):
            return not expr.id.startswith("__")
        if isinstance(expr, ast.Attribute):
            if expr.attr.startswith("_"):
                return False
            if isinstance(expr.value, ast.Call):  # np.finfo(np.float32).min
                return self.plain(expr.value)
            return dotted(expr) is not None and dotted(expr).split(".")[0] in self.roots
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            return all(map(self.plain, expr.elts))
        if isinstance(expr, ast.Dict):
            return all(self.plain(e) for e in [*expr.keys, *expr.values] if e is not None)
        if isinstance(expr, ast.BinOp):
            return self.plain(expr.left) and self.plain(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return self.plain(expr.operand)
        if isinstance(expr, (ast.BoolOp, ast.Compare)):
            parts = (expr.values if isinstance(expr, ast.BoolOp)
                     else [expr.left, *expr.comparators])
            return all(map(self.plain, parts))
        if isinstance(expr, ast.IfExp):
            return all(map(self.plain, (expr.test, expr.body, expr.orelse)))
        if isinstance(expr, ast.Subscript):  # float32[:, ::1], a table's element
            return self.plain(expr.value) and self.plain(expr.slice)
        if isinstance(expr, ast.Slice):
            return all(e is None or self.plain(e) for e in (expr.lower, expr.upper, expr.step))
        if isinstance(expr, ast.Call):
            if self.is_jit(expr) or self.jit_made(expr):  # cuda.jit(s), cuda.jit(s)(f)
                return True
            owner, _, name = self.module_of(expr.func).rpartition(".")
            maker = (owner in ("numba", "numba.types", "numba.cuda", "math", "cmath")
                     or owner == "numpy" and name in NUMPY_MAKERS
                     or isinstance(expr.func, ast.Name) and expr.func.id in BUILTIN_MAKERS
                     and expr.func.id not in self.bound | set(self.roots))
            return bool(maker) and not name.startswith("_") and self.plain_arguments(expr)
        return False


def needed(found, names, changes=True):
    """The statements of `found` that the names need, in notebook order. A module's
    functions called at top level (np.save(...), cuda.synchronize()) are not changes
    of the module: names that imports bind count as changed only when assigned into.
    Without `changes`, only what binds a needed name: all that a kernel's definition
    runs (kernel_only)."""
    imported = set().union(*(s.binds for s in found
                             if isinstance(s.node, (ast.Import, ast.ImportFrom))))
    wanted, keep = set(names), set()
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(found):
            if i in keep or _checker_call(s.node):
                continue
            binds = s.binds & wanted or ("*" in s.binds)
            if binds or (changes and isinstance(s.node, (ast.Expr, ast.Assign,
                                                         ast.AugAssign, ast.AnnAssign))
                         and s.changes & wanted - imported - set(names)):
                keep.add(i)
                new = s.reads - wanted
                if new:
                    wanted |= new
                    changed = True
    return [s for i, s in enumerate(found) if i in keep]
