"""What the grader runs of a notebook for one exercise (kernels.grading.extract): the
statements its names need, nothing else; and which kernels are made by Numba alone."""

import textwrap

import pytest

from kernels.grading import extract


def cells(*sources):
    return [{"cell_type": "code", "source": textwrap.dedent(s)} for s in sources]


def kept_source(names, *sources):
    found, _ = extract.statements(cells(*sources))
    return [extract.ast.unparse(s.node) for s in extract.needed(found, names)]


def test_the_names_need_their_imports_definitions_and_values_transitively():
    kept = kept_source(["saxpy_kernel"], """
        import numpy as np
        import os
        from numba import cuda
        SCALE = 2
        OTHER = 3
        """, """
        @cuda.jit(device=True)
        def twice(v):
            return v * SCALE

        @cuda.jit
        def saxpy_kernel(a, x, y, out):
            for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
                out[i] = twice(a * x[i]) + y[i]
        """)
    assert kept[0] == "from numba import cuda" and "SCALE = 2" in kept
    assert any(k.startswith("@cuda.jit(device=True)\ndef twice") for k in kept)
    assert not any("os" in k or "OTHER" in k or "numpy" in k for k in kept)


def test_a_cell_of_tricks_and_the_notebook_s_own_tries_are_not_run():
    kept = kept_source(["saxpy_kernel"], """
        import sys
        from numba import cuda
        from kernels import checks
        sys.setprofile(lambda *a: None)
        """, """
        @cuda.jit
        def saxpy_kernel(a, x, y, out):
            pass
        """, "saxpy_kernel[4, 64](1.0, x, y, out)", "checks.saxpy(saxpy_kernel)",
        "print(saxpy_kernel)", "print(saxpy_kernel[4, 64])")
    assert kept == ["from numba import cuda",
                    "@cuda.jit\ndef saxpy_kernel(a, x, y, out):\n    pass"]


def test_what_changes_a_needed_object_in_place_is_run():
    kept = kept_source(["f"], """
        import types
        module = types.ModuleType("m")
        exec("def f(): return 1", module.__dict__)
        table = [0] * 4
        table[2] = 7
        f = module.f
        """)
    assert 'exec(\'def f(): return 1\', module.__dict__)' in kept and "table[2] = 7" not in kept


def test_the_last_definition_wins_as_in_the_notebook():
    kept = kept_source(["k"], "def k(): return 1", "def k(): return 2")
    assert len(kept) == 2 and kept[-1].endswith("return 2")


@pytest.mark.parametrize("source", [
    """
    from numba import cuda, float32
    import numpy as np
    import math
    from kernels.reduction import THREADS
    TPB = 16
    LIMIT = np.float32(math.pi) * 2
    @cuda.jit(device=True, inline=True)
    def helper(v):
        return v
    @cuda.jit("void(float32[:, ::1], float32[:, ::1])", fastmath=True)
    def k(a, out):
        tile = cuda.shared.array((TPB, TPB), float32)
        out[0, 0] = helper(a[0, 0]) * LIMIT + THREADS
    """,
    """
    import numba
    def python_k(x):
        x[0] = 1
    k = numba.cuda.jit(python_k)
    """,
    """
    from numba import cuda
    k = cuda.jit("void(int32[::1])")(lambda_free := None) if False else None
    """,
    """
    from numba import cuda
    jit = cuda.jit(fastmath=True)
    @jit
    def k(x):
        x[0] = 1
    """,
    """
    from numba import cuda
    SIG = "void(int32[::1])"
    @cuda.jit(SIG, fastmath=True)
    def k(x):
        x[0] = 1
    """,
    """
    try:
        from numba import cuda
    except ImportError:
        cuda = None
    import numba.cuda
    import numpy as np
    from kernels import checks
    BIG = float("inf")
    STEP = 1
    STEP *= 2
    ONE = np.array([1.0])
    TILE = 4
    @numba.cuda.jit(fastmath=True)
    def k(x):
        x[0] = min(BIG, ONE[0] * STEP * TILE) + DTYPE(LOWEST) * 0
    LOWEST = np.finfo(np.float32).min
    DTYPE = np.float32
    rng = np.random.default_rng(0)
    test_input = rng.random(10, dtype=DTYPE)
    print(checks.saxpy(k))
    report = checks.clip_2d(k)
    print("check", ONE.sum())
    a = np.arange(TILE * TILE, dtype=np.float32).reshape(TILE, TILE)
    k.forall(a.size)(a)
    """,
])
def test_kernels_made_by_numba_from_functions_and_values_are_kernel_only(source):
    """Styles students write (and the book's own exercise cells) load as kernels only."""
    found, _ = extract.statements(cells(source))
    assert (extract.kernel_only(found, ["k"]) == "") == (
        "lambda_free" not in source)


@pytest.mark.parametrize("source, why", [
    ("from numba import cuda\ndef trick():\n    return cuda.jit\n@trick()\ndef k(x):\n"
     "    pass\n", "k is made by trick()"),
    ("class Fake:\n    pass\nk = Fake()\n", "a classdef statement runs code there"),
    ("from numba import cuda\nimport numpy as np\nN = np.lib.format.pickle.loads(b'')\n"
     "@cuda.jit\ndef k(x):\n    x[0] = N\n", "it computes np.lib.format.pickle.loads"),
    ("from numba import cuda\nimport os\nif os.system('true'):\n    @cuda.jit\n"
     "    def k(x):\n        pass\n", "it tests os.system('true')"),
    ("def float(x):\n    return 1.0\nfrom numba import cuda\nBIG = float('inf')\n"
     "@cuda.jit\ndef k(x):\n    x[0] = BIG\n", "it computes float('inf')"),
    ("from numba import cuda\nimport os\n@cuda.jit\ndef k(x, y=os.system('true')):\n"
     "    pass\n", "k is made with os.system"),
    # a decorator is called: a name, an element or a choice that finds the student's
    # function runs it (an outside review patched the compiler so from one)
    ("from numba import cuda\ndef gpu(f):\n    return cuda.jit(f)\n@gpu\ndef k(x):\n"
     "    pass\n", "k is made by gpu"),
    ("from numba import cuda\ndef gpu(f):\n    return cuda.jit(f)\nD = [gpu]\n@D[0]\n"
     "def k(x):\n    pass\n", "k is made by D[0]"),
    ("from numba import cuda\ndef gpu(f):\n    return cuda.jit(f)\n"
     "@(cuda.jit if False else gpu)\ndef k(x):\n    pass\n", "k is made by cuda.jit if"),
    ("from numba import cuda\nfrom numba.cuda import jit\ndef jit(f):\n"
     "    return cuda.jit(f)\n@jit\ndef k(x):\n    pass\n", "k is made by jit"),
    ("from numba import cuda\ndef gpu(f):\n    return cuda.jit(f)\njit = cuda.jit\n"
     "jit = gpu\n@jit\ndef k(x):\n    pass\n", "k is made by jit"),
    # a kernel or device function made from the student's function runs it when called
    ("from numba import cuda\ndef evil(f):\n    return cuda.jit(f)\n"
     "@cuda.jit(device=True)(evil)\ndef k(x):\n    pass\n", "k is made by cuda.jit(device"),
    ("from numba import cuda\ndef evil(f):\n    return f\n@cuda.jit(evil)\ndef k(x):\n"
     "    pass\n", "k is made by cuda.jit(evil)"),
    ("from numba import cuda\ndef evil(f):\n    return cuda.jit(f)\n"
     "helper = cuda.jit(device=True)(evil)\n@helper\ndef k(x):\n    pass\n",
     "k is made by helper"),
    ("from numba import cuda\ndef evil(x):\n    return 1\n"
     "N = cuda.jit(device=True)(evil)(2)\n@cuda.jit\ndef k(x):\n    x[0] = N\n",
     "it computes cuda.jit(device=True)(evil)(2)"),
    ("from numba import cuda\nG = {}\nG['a'] = 1\n@cuda.jit\ndef k(x):\n    x[0] = G\n",
     "it changes G in place"),
    ("from numba import cuda\nimport numpy as np\nT = np.zeros(4)\nT[1:] = 1\n"
     "@cuda.jit\ndef k(x):\n    x[0] = T[0]\n", "it changes T in place"),
])
def test_a_kernel_whose_definition_runs_student_code_is_not(source, why):
    found, _ = extract.statements(cells(source))
    assert why in extract.kernel_only(found, ["k"])


def test_cells_that_do_not_parse_or_are_skipped_are_left_out():
    found, sources = extract.statements(
        cells("def k(:\n    pass", "k = 1", "def h(a, a):\n    pass") + [{"cell_type": "code", "source": "k = 2",
                                                "metadata": {"tags": ["skip-execution"]}}])
    assert [s.cell for s in found] == [2] and list(sources) == [2]


def test_an_import_of_several_names_counts_only_the_names_the_answer_uses():
    # the streams chapter's own import line, and an answer that uses only `streams`
    found, _ = extract.statements(cells("""
        import kernels
        from kernels import checks, harness, plots, streams
        from numba import cuda
        """, """
        def chunked(a, chunks):
            return [cuda.stream() for _ in streams.chunk_bounds(len(a), chunks)]
        """, "print(checks.chunked(chunked))"))
    kept = extract.needed(found, ["chunked"])
    assert [extract.ast.unparse(s.node) for s in kept] == [
        "from kernels import streams", "from numba import cuda",
        "def chunked(a, chunks):\n    return [cuda.stream() for _ in "
        "streams.chunk_bounds(len(a), chunks)]"]


def test_a_module_read_through_globals_by_its_name_is_needed():
    # the parameter `streams` hides the module, so the answer reads it from globals()
    kept = kept_source(["bounded"], "from kernels import checks, streams", """
        def bounded(a, chunks, streams):
            return globals()["streams"].chunk_bounds(a.size, chunks)
        """)
    assert kept[0] == "from kernels import streams"
