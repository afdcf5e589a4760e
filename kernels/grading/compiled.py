"""On the simulator, compile for a GPU every kernel that a host function's answer launched.

The simulator runs a kernel as Python, so a kernel a GPU cannot compile (a 16-bit atomic,
a NumPy call) can pass there. The judge compiles a kernel exercise's kernel with the
exercise's signature before its checker runs (kernels.grading.judge.check); a host
function's kernels are known only once it runs. So its answer process records each kernel
of the notebook's that it launches, with the signature of the types it was launched with
(kernels.checks.launches.signature, sent back in each reply), and after the checker passes
the judge asks a certifying process (an answer process where Numba targets a GPU, which
loads only kernels' definitions that run no code of the student's) to compile each one
with each signature, as a GPU does at the launch. A kernel that does not compile fails
the exercise; a kernel the grader could not compile flags the row for the instructor.
"""

import ast
import re

from kernels.grading import answers, extract

# What compiling a kernel raises when the kernel is wrong (else the grader cannot compile)
COMPILE_ERRORS = {"TypingError", "LoweringError", "UnsupportedError", "NumbaTypeError",
                  "NumbaValueError", "NumbaNotImplementedError", "NumbaAttributeError",
                  "TypeError", "ValueError", "NotImplementedError", "AttributeError",
                  "NameError", "KeyError", "IndexError", "ZeroDivisionError"}
_TYPE = r"(?:u?int(?:8|16|32|64)|float(?:16|32|64)|complex(?:64|128)|boolean)"
_ARRAY = rf"{_TYPE}\[(?:(?::|::1)(?:, (?::|::1))*)\]"
# A signature as kernels.checks.launches.signature writes it, and nothing else: the
# answer process sends it, and the certifying process hands it to Numba's parser
MAX_KERNELS = 16  # (kernel, signature) pairs compiled for one exercise: each takes a while
SIGNATURE = re.compile(rf"void\((?:(?:{_ARRAY}|{_TYPE})(?:, (?:{_ARRAY}|{_TYPE}))*)?\)")


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(?:\.(?:[A-Za-z_][A-Za-z_0-9]*|<locals>))*")


def launched(entry):
    """(module, qualified name, signature) of a kernel in a reply's ["launched", ...]
    entry (kernels.grading.answers), or None if it is not one."""
    if not (isinstance(entry, list) and len(entry) == 4 and entry[0] == "launched"
            and all(isinstance(e, str) and len(e) < 400 for e in entry[1:])):
        return None
    _, module, qualname, signature = entry
    if not (_DOTTED.fullmatch(module.removeprefix("@")) and _DOTTED.fullmatch(qualname)) or \
            signature and not SIGNATURE.fullmatch(signature):
        return None
    return module, qualname, signature


def kernels(found, names):
    """{kernel: "" or why}: the kernels that the statements `names` need define in the
    notebook (by a def decorated with a jit, or a jit's call), each with "" if its
    definition runs no code of the student's, else why (kernels.grading.extract)."""
    found_names = []
    for s in extract.needed(found, names):
        node = s.node
        if isinstance(node, ast.FunctionDef) and any(map(_names_jit, node.decorator_list)):
            found_names.append(node.name)
        elif isinstance(node, ast.Assign) and _names_jit(node.value):
            found_names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return {n: extract.kernel_only(found, [n]) for n in dict.fromkeys(found_names)}


def _names_jit(expr):
    """Whether `expr` names a jit (cuda.jit, jit, njit): a name or attribute, not the
    text of a string (a module's source held in a string is no kernel)."""
    return any(isinstance(n, ast.Name) and "jit" in n.id or
               isinstance(n, ast.Attribute) and "jit" in n.attr for n in ast.walk(expr))


def needs_own(found, names):
    """Whether the kernels that `names` launch are likely made where the shared
    certifying process cannot load them (none defined plainly in the notebook, or one
    whose definition runs code of the student's): then the exercise's own certifying
    process is started with its answer process, to load while the checker runs."""
    found_kernels = kernels(found, names)
    return not found_kernels or any(found_kernels.values())


def certify(exercise, answer, shared, loadable, own):
    """(why a kernel `answer` launched does not compile for a GPU, or "";
        what the grader could not compile, for the instructor, or ""): each kernel it
    launched (answer.kernels: module, qualified name, signature), compiled with each
    signature it was launched with. A kernel of the notebook's whose definition runs no
    code of the student's (`loadable`: kernels) is compiled by `shared`, the certifying
    process of the notebook's kernels; any other by the processes that `own` (functions)
    start, in turn, each loading what the exercise's names need as its answer process
    does: the student's code runs there, so what they say is evidence of the answer's,
    like its launch record. A kernel that one does not compile goes to the next, and the
    last one's word stands (the judge's first is shared by a notebook's host functions,
    its last holds the exercise's code only: another exercise's code cannot fail it)."""
    limits = []
    for module, qualname, signature in sorted(answer.kernels)[:MAX_KERNELS]:
        plain = module == "__main__" and loadable.get(qualname) == "" and shared is not None
        why = ("it was launched with an argument whose type the grader cannot name"
               if not signature else "it is defined inside a function"
               if "<locals>" in qualname else "")
        if why:
            limits.append(f"kernel `{qualname}` was not compiled for a GPU: {why}")
            continue
        tries = ([(lambda: getattr(shared, "answer", shared), qualname)] if plain
                 else [(start, exercise.names[0]) for start in own])
        for number, (start, subject) in enumerate(tries, 1):
            try:
                _compile(start(), subject, signature, module, qualname)
                break
            except Exception as err:  # fail closed, as for a kernel exercise
                if number < len(tries):
                    continue
                if type(err).__name__ in COMPILE_ERRORS:
                    return (f"{exercise.check_name}: a kernel of yours does not compile "
                            f"for a GPU.\n  FAIL  your kernel `{qualname}`, as your "
                            f"`{exercise.names[0]}` launches it, does not compile for a "
                            f"GPU with the arguments it was given ({signature}): it raised "
                            f"{type(err).__name__}: {str(err)[:1500]}\nThe simulator runs "
                            "a kernel as Python; a GPU runs only what Numba compiles: "
                            "arithmetic, arrays, cuda.* calls (atomics of 32- and 64-bit "
                            "values), not NumPy's functions or Python objects."), ""
                limits.append(f"kernel `{qualname}` was not compiled for a GPU: compiling "
                              f"it raised {type(err).__name__}: {str(err)[:300]}")
    if len(answer.kernels) > MAX_KERNELS:
        limits.append(f"only {MAX_KERNELS} of the {len(answer.kernels)} kernel signatures "
                      "it launched were compiled for a GPU")
    return "", "; ".join(dict.fromkeys(limits))


def _compile(process, subject, signature, module, qualname):
    """Compile the kernel `module`.`qualname` with `signature` in certifying `process`,
    where `subject` must have loaded; raise what compiling raised."""
    missing, errors = process.missing()
    if subject in missing:
        raise answers.NotFound(f"{subject} was not loaded where Numba targets a GPU "
                               f"({'; '.join(errors[:2])})")
    process.run(answers.CERTIFY, (signature, module, qualname), subject)
