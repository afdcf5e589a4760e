"""The numbers a chapter glues into its prose, for the notebooks that Colab opens.

The book writes computed numbers into its text with myst-nb's {glue:text}`key` role;
Colab cannot render that role. The notebooks carry the numbers instead, so this module
finds them the way the book build does: it runs the chapter's code cells on the Numba
CUDA simulator (where every benchmark cell returns the committed recording,
book/_data/bench/*.json, even on a machine with a GPU) in a process of its own, and
collects what they glue, with the device and date of the recordings each value was
computed from and the order the values were glued in.

Running a chapter takes a minute, so the result is kept in book/_data/glue/<chapter>.json
with a digest of what produced it: the chapter's code cells and the recordings. A store
whose digest no longer matches is stale: `make notebooks` runs the chapter again,
`notebooks.py --check` reports it. A change in the package that changes a glued value
without touching either is caught by tests/test_book.py, which compares the store with
the values the book build glued.

    python book/_tools/glue_values.py collect ROOT CHAPTER OUT BENCH all|only-glue
                                                                     (the child process)

BENCH, a folder of recordings in place of book/_data/bench ("" for none), renders the
chapter against another device's data (render_against.py), which runs only the cells
the glued values need ("only-glue": glue_cells).
"""

import ast
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from book_config import ConversionError

STORE = pathlib.PurePosixPath("book/_data/glue")
BENCH = pathlib.PurePosixPath("book/_data/bench")
NOTEBOOK_CELLS = pathlib.PurePosixPath("kernels/notebook_cells.py")
TOOLS = pathlib.Path(__file__).resolve().parent


def uses_glue(text):
    return "{glue" in text


def code_cells(root, name):
    """The chapter's code cells as notebook cell dicts (source and tags)."""
    import jupytext

    source = jupytext.read(root / f"{name}.md", fmt="md:myst")
    return [{"cell_type": "code", "source": c.source,
             "metadata": {"tags": list(c.metadata.get("tags", []))}}
            for c in source.cells if c.cell_type == "code"]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _names(node, ctx):
    """The names `node` loads or stores (ctx) in its own scope: not in the functions,
    classes and comprehensions it holds, whose reads _uses takes from symtable."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ctx) else set()
    if isinstance(node, _SCOPES) and not isinstance(node, (ast.FunctionDef,
                                                            ast.AsyncFunctionDef,
                                                            ast.ClassDef)):
        return set()
    return set().union(*(_names(child, ctx) for child in ast.iter_child_nodes(node)))


def _in_order(body, bound, free):
    """Walk statements in the order they run: each name a statement loads before any
    earlier statement (or the statement's own earlier part: a loop's target, a with's
    name) bound it goes into `free`."""
    def load(node):
        free.update(_names(node, ast.Load) - bound)

    for st in body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for part in [*st.decorator_list, *getattr(st, "bases", ()),
                         *getattr(getattr(st, "args", None), "defaults", ())]:
                load(part)
            bound.add(st.name)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            load(st.iter)
            bound.update(_names(st.target, ast.Store))
            _in_order(st.body + st.orelse, bound, free)
        elif isinstance(st, (ast.If, ast.While)):
            load(st.test)
            _in_order(st.body + st.orelse, bound, free)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                load(item.context_expr)
                if item.optional_vars is not None:
                    bound.update(_names(item.optional_vars, ast.Store))
            _in_order(st.body, bound, free)
        elif isinstance(st, ast.Try):
            _in_order(st.body, bound, free)
            for handler in st.handlers:
                if handler.type is not None:
                    load(handler.type)
                if handler.name:
                    bound.add(handler.name)
                _in_order(handler.body, bound, free)
            _in_order(st.orelse + st.finalbody, bound, free)
        else:  # one statement: what it reads runs before what it binds (x = x + 1)
            load(st)
            bound.update(_names(st, ast.Store))


def _uses(source, modules=()):
    """(bound, read) of a cell's code: the names it binds or changes at its top level
    (assigned, defined, imported, an object whose attribute or item it sets, an object
    but one of `modules` whose method it calls), and the names it reads before it binds
    them, in the bodies of the functions it defines too (all their global reads). None
    where it does not parse (IPython syntax)."""
    import symtable

    try:
        tree, table = ast.parse(source), symtable.symtable(source, "<cell>", "exec")
    except SyntaxError:
        return None
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    read = set()
    _in_order(tree.body, set(), read)

    def globals_read(t):
        for child in t.get_children():
            read.update(s.get_name() for s in child.get_symbols()
                        if s.is_referenced() and (s.is_global() or s.is_free()))
            bound.update(s.get_name() for s in child.get_symbols() if s.is_declared_global()
                         and s.is_assigned())
            globals_read(child)

    globals_read(table)
    for n in ast.walk(tree):
        called = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        target = n.func.value if called else n.value if isinstance(
            n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)) \
            else None
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if isinstance(target, ast.Name) and not (called and target.id in modules):
            bound.add(target.id)
            read.add(target.id)  # it changes an object that an earlier cell made
    return bound, read


def glue_cells(cells):
    """The code cells that the chapter's glued values need: each cell that glues, and each
    earlier cell that binds or changes a name that a needed later cell reads (_uses; a
    call of an imported module's function counts as changing nothing).
    The others (a figure drawn, a check printed) change nothing glued: render_against
    runs only these. A cell that does not parse is kept."""
    modules = set()  # the names imports bind: calling a module's function changes none
    for cell in cells:
        try:
            modules |= {a.asname or a.name.split(".")[0] for n in ast.walk(ast.parse(
                cell["source"])) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
        except SyntaxError:
            pass
    needed, kept = set(), []
    for cell in reversed(cells):
        uses = _uses(cell["source"], modules)
        if uses is None or "glue" in uses[1] or uses[0] & needed:
            kept.append(cell)
            needed |= uses[1] if uses is not None else set()
    return kept[::-1]


def digest(root, name):
    """What the glued values depend on and the store records: code cells, recordings."""
    recordings = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in sorted((root / BENCH).glob("*.json"))}
    text = json.dumps({"cells": code_cells(root, name), "recordings": recordings},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def store_path(root, name):
    return root / STORE / f"{pathlib.PurePosixPath(name).name}.json"


def stored(root, name):
    """The chapter's store, or None where there is none."""
    path = store_path(root, name)
    return json.loads(path.read_text()) if path.exists() else None


def is_stale(root, name):
    data = stored(root, name)
    return data is None or data.get("inputs") != digest(root, name)


def values(root, name, mode="fresh"):
    """The chapter's store: {"values", "recorded", "order", ...}.

    mode "fresh": the store must match the chapter (ConversionError otherwise);
    "refresh": run the chapter when it does not, and write the store;
    "stored": whatever is stored (for reporting what is out of date)."""
    data = stored(root, name)
    if mode == "stored" or (data is not None and data.get("inputs") == digest(root, name)):
        return data or {"values": {}, "recorded": {}, "order": []}
    if mode != "refresh":
        where = store_path(root, name).relative_to(root)
        raise ConversionError(f"{where} is {'missing' if data is None else 'out of date'} "
                              "(the chapter's code cells or the recordings changed): run "
                              "`make notebooks`")
    data = {"chapter": f"{name}.md", "inputs": digest(root, name), **collect(root, name)}
    path = store_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"ran {name}.md for its glued numbers: wrote {path.relative_to(root)}")
    return data


def collect(root, name, bench=None, only_glue=False):
    """Run the chapter's code cells in a child process; what they glued. `bench`: a
    folder of recordings the chapter reads in place of book/_data/bench; `only_glue`:
    run only the cells the glued values need (glue_cells)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(root),
                                                        os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as work:
        out = pathlib.Path(work) / "glued.json"
        proc = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "collect",
                               str(root), name, str(out), str(bench or ""),
                               "only-glue" if only_glue else "all"],
                              cwd=work, env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ConversionError(f"{name}.md: running its code cells for the glued numbers "
                                  f"failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
        return json.loads(out.read_text())


# ---------------------------------------------------------------- the child process


def recording_of(result):
    """(device, date) of a recorded benchmark result; None for a live one."""
    if object.__getattribute__(result, "live"):
        return None
    env = object.__getattribute__(result, "env")
    entry = object.__getattribute__(result, "entry")
    return env["device"]["name"], entry["date"][:10]


def run_chapter(root, name, bench=None, only_glue=False):
    """In this process: run the chapter's code cells (only_glue: those its glued values
    need, glue_cells), return what they glued."""
    import importlib.util
    import types

    # loaded from its file: importing it through the package would import `kernels`
    spec = importlib.util.spec_from_file_location("notebook_cells",
                                                  TOOLS.parents[1] / NOTEBOOK_CELLS)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    cells = code_cells(root, name)
    if only_glue:
        cells = glue_cells(cells)
    glued = {"values": {}, "recorded": {}, "order": []}
    touched = set()  # recordings read in the current cell so far
    namespace = {"__name__": "__main__"}
    current = {"names": set()}

    try:  # which recordings a value was computed from: those its cell reads
        from kernels.harness import recording
    except ImportError:  # a book without the course package (the tools' tests)
        recording = None
    if recording is not None:
        if bench is not None:
            recording.BENCH_DIR = pathlib.Path(bench)
        plain = recording.Result.__getattribute__

        def noted(self, attr):
            if attr in ("entry", "limits", "rows", "get", "env", "caption"):
                where = recording_of(self)
                if where:
                    touched.add(where)
            return plain(self, attr)

        recording.Result.__getattribute__ = noted

    def on_cell(number):
        touched.clear()
        code = cells[number - 1]["source"]
        try:
            current["names"] = {n.id for n in ast.walk(ast.parse(code))
                                if isinstance(n, ast.Name)}
        except SyntaxError:
            current["names"] = set()

    def glue(key, value, display=True):
        if display or not isinstance(value, (int, float, str)):
            return  # a figure or object: the notebook shows it where the cell runs
        sources = set(touched)
        if recording is not None:  # recordings named in the cell, read in an earlier one
            sources |= {recording_of(v) for n, v in namespace.items()
                        if n in current["names"] and isinstance(v, recording.Result)}
        glued["values"][key] = value
        glued["recorded"][key] = sorted(s for s in sources if s)
        if key in glued["order"]:
            glued["order"].remove(key)
        glued["order"].append(key)

    sys.modules["myst_nb"] = types.SimpleNamespace(glue=glue)
    runner.run(cells, namespace, on_cell=on_cell, strict=True)
    return glued


def main(argv):
    if len(argv) != 6 or argv[0] != "collect" or argv[5] not in ("all", "only-glue"):
        sys.exit(__doc__)
    root, name, out = pathlib.Path(argv[1]), argv[2], pathlib.Path(argv[3])
    glued = run_chapter(root, name, argv[4] or None, argv[5] == "only-glue")
    out.write_text(json.dumps(glued, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
