"""What an answer's code reaches beyond its exercise, read from its code (parsed, never
run): the grader's own modules, the interpreter's introspection, and whether it runs
on the simulator (kernels.grading.judge.inspect_answer decides what each means).

It reads only the statements the answer needs (kernels.grading.extract.needed), which
are all that the answer's process runs; the names an import binds that the answer never
uses are not among them (kernels.grading.extract.statements splits such an import), so
the chapter's own `from kernels import checks, harness, plots, streams` costs nothing,
while a use of kernels.checks by any spelling the imports allow (an alias, an attribute,
getattr with a name in a string, a string naming the module) is found. A name computed
at run time cannot be read here, so the reading fails closed: a computed attribute of
the course's package, the module table (sys.modules), code or an import from a string
built at run time, and an attribute read by a computed name of an object it cannot
name all count as reaching the grader's modules (_unreadable). So, of any object but the
answer's own (self), an attribute read or written by a name given at run time counts as
introspection (_computed_names). This reading catches the usual spellings only: names
bound at run time (a module rebound to another name, the builtins reached through a
dict) and the libraries that resolve strings get past any list of names, which is why
what the answer process reports is evidence, not a verdict (book/instructors.md).
"""

import ast

from kernels.grading.extract import dotted

# The grader's own modules: the checkers, the grader, the simulator's launch underneath
# the launch record, and the tracer, which records the race case's evidence beside the
# answer (what it finds is judged in the judge, but what it records is made there)
GRADER = ("kernels.checks", "kernels.grading", "kernels.simulator", "kernels.trace")
# What an answer never needs and a forgery does: the interpreter's frames, objects,
# hooks and module table, raw memory, and imports by computed name.
INTROSPECTION = {"_current_frames", "_getframe", "f_locals", "f_globals", "f_back",
                 "setprofile", "settrace", "get_objects", "get_referents",
                 "get_referrers", "callbacks", "pythonapi", "ctypes", "__code__", "__globals__",
                 "builtins", "__builtins__", "__import__", "import_module", "reload",
                 "inspect",
                 # frames by other doors, and names resolved from strings or bytes
                 "walk_stack", "extract_stack", "tb_frame", "exc_info", "attrgetter",
                 "methodcaller", "resolve_name", "pickle", "marshal", "dill",
                 # raw memory through NumPy
                 "ctypeslib",
                 # the process's own file descriptors (its pipes to the judge), and
                 # processes of its own
                 "fcntl", "dup", "dup2", "fdopen", "fstat", "subprocess", "Popen", "fork",
                 "forkpty", "execv", "execve", "execvp", "spawnv", "system", "popen"}
# Doors an outside review (2026-11-28) went through: code run or names resolved from
# strings by the standard library, frames by other attributes, raw memory, processes
# and descriptors by other calls. Common words among them (profile, locate, mock), so
# they count only as what is imported or an attribute read, never as a name of the
# answer's own or a dict's key.
LIBRARY_DOORS = {"timeit", "runpy", "pydoc", "locate", "mock", "cProfile", "profile",
                 "InteractiveInterpreter", "InteractiveConsole", "get_type_hints",
                 "_gcd_import", "_importer", "BaseConfigurator", "get_field", "Formatter",
                 "f_builtins", "f_code", "gi_frame", "cr_frame", "currentframe",
                 "as_strided", "_ctypes", "PyObj_FromPtr", "from_address", "posix_spawn",
                 "posix_spawnp", "spawnl", "spawnlp", "spawnve", "spawnvp", "spawnvpe",
                 "spawnle", "spawnlpe", "execl", "execlp", "execle", "execlpe", "execvpe",
                 "create_subprocess_exec", "create_subprocess_shell", "ProcessPoolExecutor",
                 "pty", "multiprocessing", "mmap", "socket"}
# Files that are the process itself: its memory, its descriptors
PROCESS_FILES = ("/proc/", "/dev/fd")


# Dunder attributes an answer may read; any other (a function's __closure__, a class's
# __mro__, a hook's __qualname__, an object's __dict__ but as the namespace exec runs
# code in) reads or rewrites the interpreter's own objects, and so counts as
# introspection
PLAIN_DUNDERS = {"__name__", "__doc__", "__init__", "__len__", "__version__",
                 "__array_interface__", "__cuda_array_interface__"}
# NumPy's and Numba's array protocols: an object that offers one (a class's attribute, a
# namespace's, a dict's key for type()) hands them a raw address, id() of any object,
# and the array made from it writes that object's memory without ctypes
ARRAY_PROTOCOLS = {"__array_interface__", "__cuda_array_interface__", "__array_struct__"}
# The builtins that read or write an attribute by a name given at run time: called with
# a name in a string constant they are the attribute (getattr(f, "x") is f.x); with any
# other name, or passed around as values, what they reach cannot be read here
BY_NAME = {"getattr", "setattr", "delattr", "hasattr", "vars"}


def _introspective(name):
    """Whether attribute `name` is one only introspection needs."""
    return name in INTROSPECTION or name == "cell_contents" or (
        name.startswith("__") and name.endswith("__") and name not in PLAIN_DUNDERS)


# What tells the simulator from a GPU: an answer that asks runs one branch on the
# simulator and another on a GPU, and the simulator can grade only its own.
# (cuda.is_available() is True on both, so `assert cuda.is_available()` asks nothing.)
SIMULATOR_FLAGS = {"ENABLE_CUDASIM", "NUMBA_ENABLE_CUDASIM", "SIMULATOR", "simulator",
                   "FakeCUDAKernel", "FakeCUDAArray"}


# Calls that run or import what a string names: given a string built at run time, what
# they reach cannot be read here (the reading fails closed)
RUNS_STRINGS = {"exec", "eval", "compile"}
IMPORTS_STRINGS = {"__import__", "import_module"}
GRADER_NAMES = {g.rpartition(".")[2] for g in GRADER}  # checks, grading, simulator, trace


def _called(n):
    """The name a call calls (`exec`, `importlib.import_module` -> import_module); the
    builtins that run strings only as themselves (re.compile is not compile)."""
    if not isinstance(n, ast.Call):
        return None
    if isinstance(n.func, ast.Name):
        return n.func.id
    if isinstance(n.func, ast.Attribute):
        base = dotted(n.func.value) or ""
        return n.func.attr if n.func.attr not in RUNS_STRINGS or base in (
            "builtins", "__builtins__") else None
    return None


def _source(n, run=()):
    """The Python source a string constant holds: any multi-line string (a module the
    notebook execs), any string that exec, eval or compile is given, any string bound to
    a name of `run`, the names those are given."""
    if isinstance(n, ast.Constant) and isinstance(n.value, str) and "\n" in n.value:
        return n.value
    if _called(n) in RUNS_STRINGS and n.args and isinstance(n.args[0], ast.Constant) and \
            isinstance(n.args[0].value, str):
        return n.args[0].value
    if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and \
            isinstance(n.value.value, str) and any(
                isinstance(t, ast.Name) and t.id in run for t in n.targets):
        return n.value.value  # a name bound to a string that exec runs (_strings)
    return None


def _nodes(node, depth=0, run=()):
    """Every node of `node`, and of the Python source that its strings hold (_source;
    `run`: the names exec, eval or compile are given), to a few levels."""
    for n in ast.walk(node):
        yield n
        source = _source(n, run) if depth < 3 else None
        if source is not None:
            try:
                inner = ast.parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            yield from _nodes(inner, depth + 1, run)


def _run_names(kept):
    """The names that the kept statements give exec, eval or compile to run."""
    return {n.args[0].id for s in kept for n in ast.walk(s.node)
            if _called(n) in RUNS_STRINGS and n.args and isinstance(n.args[0], ast.Name)}


def _strings(kept):
    """{name: text} of the names the kept statements bind to a string constant at their
    top level (`_source = "..."`): exec of such a name runs a string the reading holds."""
    found = {}
    for s in kept:
        n = s.node
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and \
                isinstance(n.value.value, str):
            found.update({t.id: n.value.value for t in n.targets if isinstance(t, ast.Name)})
    return found


def _registered(nodes, roots):
    """The ids of the `sys.modules` nodes that only register a module (`sys.modules[name]
    = module`): a store reads nothing of the table."""
    return {id(n.value) for n in nodes
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
            and "sys.modules" in _spellings(dotted(n.value) or "", roots)}


def _readable(arg, strings):
    """Whether the code or name `arg` gives is one the reading holds: a string constant,
    a name bound to one (_strings), or compile() of either."""
    if _called(arg) == "compile" and arg.args:
        arg = arg.args[0]
    return (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            or isinstance(arg, ast.Name) and arg.id in strings)


def _unreadable(n, roots, strings=(), registered=()):
    """What in node `n` reaches modules the reading cannot name, so that it may reach the
    grader's: a read of the module table, code or an import from a string built at run
    time (not one of `strings`, _strings); or None. (An attribute read by a computed
    name of an object the reading cannot name: _by_name.)"""
    if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in registered and any(
            m == "sys.modules" or m.endswith(".sys.modules")  # os.sys.modules too
            for m in _spellings(dotted(n) or "", roots)):
        return "sys.modules (every loaded module, the grader's among them)"
    called = _called(n)
    computed = bool(called and n.args) and not _readable(n.args[0], strings)
    if called in RUNS_STRINGS and computed:
        return f"{called}() of a string built at run time"
    if called in IMPORTS_STRINGS and computed:
        return f"{called}() of a name built at run time"
    return None


def _imported(nodes):
    """{name: the dotted names that the imports among `nodes` bind to it}, functions'
    bodies included (`import kernels as k` -> {"k": {"kernels"}})."""
    roots = {}
    for n in nodes:
        if isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                roots.setdefault(a.asname or a.name, set()).add(f"{n.module}.{a.name}")
        elif isinstance(n, ast.Import):
            for a in n.names:
                head = a.name.split(".")[0]
                roots.setdefault(a.asname or head, set()).add(a.name if a.asname else head)
    return roots


def _spellings(name, roots):
    """`name` (k.checks.core) as written and through every import of its first name
    (kernels.checks.core)."""
    head, dot, rest = name.partition(".")
    return [name, *(f"{m}{dot}{rest}" for m in sorted(roots.get(head, ())))]


def _by_name(n, roots):
    """The dotted names a call reaches by a name held in a string (`getattr(k, "checks")`
    -> k.checks and its spellings); a computed name, `vars(m)` or `m.__dict__` on the
    course's package or one of its modules, or on an object named only at run time,
    may reach every module it holds, so it counts as reaching the grader's (the static
    reading cannot tell which: it fails closed)."""
    if isinstance(n, ast.Attribute) and n.attr == "__dict__":
        holder, key = n.value, None
    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args and (
            n.func.id == "getattr" and len(n.args) >= 2 or n.func.id == "vars"):
        holder, key = n.args[0], n.args[1] if n.func.id == "getattr" else None
    else:
        return []
    base = dotted(holder)
    named = isinstance(key, ast.Constant) and isinstance(key.value, str)
    if base is None:  # an object named only at run time may be a module of the grader's
        return [] if named and key.value not in GRADER_NAMES else [
            "an object named only at run time, read by a computed name"]
    if named:
        return _spellings(f"{base}.{key.value}", roots)
    if any(m == "kernels" or m.startswith("kernels.") for m in _spellings(base, roots)):
        return [f"{base}.* by a computed name"]
    return []


def _computed_names(nodes):
    """What in `nodes` reads or writes attributes by names the reading cannot see: the
    attribute builtins (BY_NAME) given a name that is not a string constant, vars(), or
    any of them used as a value (aliased, passed to map); an object's __dict__ but as the
    namespace that exec or eval runs code in; an array protocol offered in any way (by a
    class, an object, a keyword, a key: ARRAY_PROTOCOLS). An answer's own objects (self)
    may be read by name, and a class's other dunders run only where the student's code
    runs anyway."""
    nodes = list(nodes)
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    namespaces = {id(a) for n in nodes if _called(n) in ("exec", "eval") for a in n.args[1:]}
    asked = {id(n.args[1]) for n in nodes  # hasattr(x, "__cuda_array_interface__"): a read
             if _called(n) in ("hasattr", "getattr") and len(n.args) >= 2}
    found = []
    for n in nodes:
        if isinstance(n, ast.Name) and n.id in BY_NAME and id(n) not in called:
            found.append(f"{n.id} as a value")
        elif (_called(n) == "vars" or _called(n) in BY_NAME and not (
                len(n.args) >= 2 and isinstance(n.args[1], ast.Constant)
                and isinstance(n.args[1].value, str))) and not _own(n):
            found.append(f"{_called(n)}() of a name built at run time")
        elif isinstance(n, ast.Attribute) and n.attr == "__dict__" and id(n) not in namespaces:
            found.append("__dict__")
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and \
                n.attr in ARRAY_PROTOCOLS:
            found.append(f"a store to {n.attr}")
        elif _called(n) == "setattr" and len(n.args) >= 2 and isinstance(
                n.args[1], ast.Constant) and n.args[1].value in ARRAY_PROTOCOLS:
            found.append(f"a store to {n.args[1].value}")
        elif isinstance(n, ast.ClassDef):
            found += [t.id for s in n.body if isinstance(s, (ast.Assign, ast.AnnAssign))
                      for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                      if isinstance(t, ast.Name) and t.id in ARRAY_PROTOCOLS]
            found += [s.name for s in n.body if isinstance(
                s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in ARRAY_PROTOCOLS]
        elif isinstance(n, ast.keyword) and n.arg in ARRAY_PROTOCOLS or isinstance(
                n, ast.Constant) and n.value in ARRAY_PROTOCOLS and id(n) not in asked:
            found.append(n.arg if isinstance(n, ast.keyword) else n.value)
    return found


def _own(call):
    """Whether an attribute builtin's call reads the answer's own object (self, or an
    attribute of it): a class of the student's that sets its fields from a dict."""
    base = dotted(call.args[0]) if call.args else None
    return base is not None and base.split(".")[0] == "self"


def reach(kept):
    """(grader modules, introspection names, simulator flags) that the kept statements
    name, functions' bodies and the sources held in their strings included, by any
    spelling their imports allow (an alias, getattr with a name in a string): what an
    answer's code reaches beyond its exercise. Only the kept statements count: the names
    an import binds that the answer never uses are not kept (statements)."""
    grader, introspection, flags = set(), set(), set()
    run = _run_names(kept)
    walked = [list(_nodes(s.node, run=run)) for s in kept]  # each statement's, read once
    every = [n for nodes in walked for n in nodes]
    roots = _imported(every)
    # the names read only for one of their attributes (kernels.harness), not as values
    held = {id(n.value) for n in every
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    keys = {id(n.slice) for n in every if isinstance(n, ast.Subscript)}  # d["__import__"]
    strings, registered = _strings(kept), _registered(every, roots)
    spelled = {m for n in every if isinstance(n, (ast.Name, ast.Attribute))
               for m in _spellings(dotted(n) or "", roots)}
    for nodes in walked:
        for n in nodes:
            modules = _by_name(n, roots)
            if isinstance(n, ast.Import):  # `import a.b` binds only `a`: a.b is used
                modules = [a.name for a in n.names  # where the code spells it
                           if a.asname or any(m == a.name or m.startswith(a.name + ".")
                                              for m in spelled)]
            elif isinstance(n, ast.ImportFrom) and n.module:
                modules = [n.module] + [f"{n.module}.{a.name}" for a in n.names]
            elif isinstance(n, ast.Attribute):
                modules += _spellings(dotted(n) or "", roots)
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                modules = [n.value]  # sys.modules["kernels.checks.core"], import_module(...)
            grader |= {m for m in modules if m.endswith(" by a computed name")
                       or any(m == g or m.startswith(g + ".") for g in GRADER)}
            unreadable = _unreadable(n, roots, strings, registered)
            if unreadable:
                grader.add(unreadable)
            name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(
                n, ast.Attribute) else None
            if _called(n) in ("getattr", "setattr", "hasattr", "delattr") and \
                    len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and \
                    isinstance(n.args[1].value, str):
                name = n.args[1].value  # getattr(f, "__closure__") is f.__closure__
            if name in INTROSPECTION or isinstance(n, (ast.Attribute, ast.Call)) and \
                    name and _introspective(name) and not (
                        name == "__dict__" and isinstance(n, ast.Attribute)) and not (
                        name == "__class__" and isinstance(n, ast.Attribute)
                        and isinstance(n.ctx, ast.Load)):  # __dict__: below; __class__: type()
                introspection.add(name)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and (
                    n.value.startswith(PROCESS_FILES)
                    or n.value in INTROSPECTION and id(n) in keys):
                introspection.add(n.value[:40])  # globals()["__builtins__"] too
            if isinstance(n, ast.Name) and id(n) not in held and \
                    "kernels" in roots.get(n.id, ()):
                grader.add("the course's package as a value (`k = kernels`: it holds the "
                           "grader's modules)")
            if name in SIMULATOR_FLAGS or isinstance(n, ast.Constant) and n.value in (
                    "NUMBA_ENABLE_CUDASIM",):
                flags.add(name or n.value)
            if isinstance(n, ast.Attribute) and n.attr in LIBRARY_DOORS:
                introspection.add(n.attr)
            if isinstance(n, (ast.Import, ast.ImportFrom)):  # numba.cuda.simulator.x too
                parts = {part for a in n.names for part in a.name.split(".")}
                if isinstance(n, ast.ImportFrom) and n.module:
                    parts |= set(n.module.split("."))
                flags |= parts & SIMULATOR_FLAGS
                introspection |= parts & (INTROSPECTION | LIBRARY_DOORS)
        introspection |= set(_computed_names(nodes))
    return sorted(grader), sorted(introspection), sorted(flags)
