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
each on its own, so one that fails does not stop the next.
"""

import ast
import dataclasses

from kernels import notebook_cells


@dataclasses.dataclass
class Statement:
    node: ast.stmt
    cell: int  # code cell number, from 1
    binds: set
    reads: set
    changes: set  # names whose objects the statement may change without rebinding them


def _names_loaded(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


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


def _changed(node):
    """Names whose objects a statement may change in place: targets of item or attribute
    assignment and what is stored there, receivers of method calls, and names handed
    directly to a call."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            for t in targets:
                for part in ast.walk(t):
                    if isinstance(part, (ast.Attribute, ast.Subscript)) and _root(part):
                        found.add(_root(part))
                        value = getattr(n, "value", None)  # stored into something
                        if isinstance(value, (ast.Name, ast.Attribute)) and _root(value):
                            found.add(_root(value))
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Attribute) and _root(n.func):
                found.add(_root(n.func))
            for arg in [*n.args, *(k.value for k in n.keywords)]:
                if isinstance(arg, ast.Starred):
                    arg = arg.value
                if isinstance(arg, (ast.Name, ast.Attribute)) and _root(arg):
                    found.add(_root(arg))
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
        try:
            tree = ast.parse(code, f"<code cell {number}>")
        except (SyntaxError, ValueError):
            continue
        sources[number] = code
        for node in tree.body:
            found.append(Statement(node, number, _bound(node), _names_loaded(node),
                                   _changed(node)))
    return found, sources


GRADER = ("kernels.checks", "kernels.grading")  # the grader's own modules
# What an answer never needs and a forgery does: the interpreter's frames, objects,
# hooks and module table, raw memory, and imports by computed name.
INTROSPECTION = {"_current_frames", "_getframe", "f_locals", "f_globals", "f_back",
                 "setprofile", "settrace", "get_objects", "get_referents",
                 "get_referrers", "pythonapi", "ctypes", "gc", "__code__", "__globals__",
                 "builtins", "__builtins__", "__import__", "import_module", "reload",
                 "inspect"}


def _checker_call(node):
    """True for a top-level `checks.<name>(...)`: the notebook's own try of a checker,
    which the answer's process does not need (and where it would check nothing)."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    chain = _dotted(call.func.value)
    return chain in ("checks", "kernels.checks")


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def reach(kept):
    """(grader modules, introspection names) that the kept statements name, functions'
    bodies included: what an answer's code reaches beyond its exercise."""
    grader, introspection = set(), set()
    for s in kept:
        for n in ast.walk(s.node):
            modules = []
            if isinstance(n, ast.Import):
                modules = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.module:
                modules = [n.module] + [f"{n.module}.{a.name}" for a in n.names]
            elif isinstance(n, ast.Attribute):
                modules = [_dotted(n) or ""]
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                modules = [n.value]  # sys.modules["kernels.checks.core"], import_module(...)
            grader |= {m for m in modules
                       if any(m == g or m.startswith(g + ".") for g in GRADER)}
            name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(
                n, ast.Attribute) else None
            if name in INTROSPECTION:
                introspection.add(name)
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                introspection |= {a.name.split(".")[0] for a in n.names} & INTROSPECTION
                if isinstance(n, ast.ImportFrom) and n.module in INTROSPECTION:
                    introspection.add(n.module)
    return sorted(grader), sorted(introspection)


def needed(found, names):
    """The statements of `found` that the names need, in notebook order. A module's
    functions called at top level (np.save(...), cuda.synchronize()) are not changes
    of the module: names that imports bind count as changed only when assigned into."""
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
            if binds or (isinstance(s.node, (ast.Expr, ast.Assign, ast.AugAssign,
                                             ast.AnnAssign)) and s.changes & wanted - imported):
                keep.add(i)
                new = s.reads - wanted
                if new:
                    wanted |= new
                    changed = True
    return [s for i, s in enumerate(found) if i in keep]
