"""On the simulator, compile for a GPU every kernel that a host function's answer launched.

The simulator runs a kernel as Python, so a kernel a GPU cannot compile (a 16-bit atomic,
a NumPy call) can pass there. The judge compiles a kernel exercise's kernel with the
exercise's signature before its checker runs (kernels.grading.judge.check); a host
function's kernels are known only once it runs. So its answer process describes each
kernel of the student's that it launches, with the signature of the types it was launched
with (kernels.checks.launches.signature; kernels.grading.copies.describe), in each reply;
and after the checker passes, the judge has each one made again from its description and
compiled with each signature, as a GPU does at the launch, in a certifying process where
no code of the student's ever ran (kernels.grading.copies.rebuild): the one that loaded
only the kernel exercises' definitions, or one that loads nothing of the notebook. A
kernel that does not compile fails the exercise; one the grader could not compile (a
value it cannot copy, an argument type it cannot name, a certifying process that
failed) leaves the exercise not graded automatically, for the instructor: the grader
fails closed.
"""

import hashlib
import re

from kernels.grading import answers, channel

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


# Numba's words where a shared or local array's shape is not a constant it can read
_ARRAY_SHAPE = re.compile(r"Function\(<function (shared|local)\.array\b")


def advice(err):
    """The sentence after a kernel's compile error `err`: what a GPU compiles; or, where
    Numba refused a shared or local array, what the shape must be (the usual cause: the
    shape is an expression, `TILE + 2`, or an attribute, `red.THREADS`, which Numba types
    as a plain integer: it is a Python object the kernel can read, yet no constant)."""
    shape = _ARRAY_SHAPE.search(str(err))
    if shape:
        return (f"A {shape[1]} array's shape must be an integer constant that Numba can "
                "read when it compiles: a literal (256), an integer constant at the top "
                "level of the notebook (THREADS = 256), or a tuple of them. Numba types "
                "an expression or another module's attribute there as a plain integer, "
                "not a constant: give the value a name at the top level of a cell "
                "(PADDED = TILE + 2) and use that name in the shape.")
    return ("The simulator runs a kernel as Python; a GPU runs only what Numba compiles: "
            "arithmetic, arrays, cuda.* calls (atomics of 32- and 64-bit values), not "
            "NumPy's functions or Python objects.")


_NAME = re.compile(r"[\w.<>]{1,300}")  # a qualified name, for messages only
_UNREADABLE = ("(unreadable)", "", "unreadable"), ["opaque", "a launch record the grader "
                                                   "could not read"]


def launched(entry):
    """(qualified name, signature, digest of the description) and the description of a
    kernel in a reply's ["launched", ...] entry (kernels.grading.answers); None if it is
    no such entry; and for one that is not well formed, a record that the exercise is
    not graded automatically (fail closed). The description is checked where it is
    rebuilt; the digest tells two kernels of one name apart (a kernel factory's)."""
    if not (isinstance(entry, list) and entry and entry[0] == "launched"):
        return None
    if not (len(entry) == 4 and all(isinstance(e, str) for e in entry[1:3])
            and _NAME.fullmatch(entry[1]) and (not entry[2] or SIGNATURE.fullmatch(entry[2]))):
        return _UNREADABLE
    _, qualname, signature, description = entry
    try:
        digest = hashlib.sha256(channel.encode(description)).hexdigest()[:16]
    except channel.ChannelError:
        return _UNREADABLE
    return (qualname, signature, digest), description


def certify(exercise, answer, certifier):
    """(report, flag): why a kernel `answer` launched does not compile for a GPU, or why
    the grader could not tell (the exercise is then not graded automatically), or
    ("", ""). Each kernel it launched (answer.kernels: (qualified name, signature,
    digest) -> description) is made again from its description and compiled with each
    signature it was launched with, in the process `certifier()` returns (one where no
    code of the student's ran: kernels.grading.copies)."""
    name = exercise.names[0]

    def not_graded(why):
        return (f"Not graded automatically: {why}. Your instructor will look at your "
                f"`{name}`."), f"not graded: {why}"

    if len(answer.kernels) > MAX_KERNELS:
        return not_graded(f"it launched {len(answer.kernels)} kernels or signatures, more "
                          f"than the {MAX_KERNELS} the grader compiles for a GPU")
    for (qualname, signature, digest), description in sorted(answer.kernels.items(),
                                                             key=lambda k: k[0]):
        if isinstance(description, list) and description[:1] == ["opaque"]:
            return not_graded(f"your kernel `{qualname}` could not be described for a GPU "
                              f"compile ({str(description[-1])[:200]})")
        if not signature:
            return not_graded(f"your kernel `{qualname}` was launched with an argument "
                              "whose type the grader cannot name (a tuple, a record, an "
                              "object), so it was not compiled for a GPU")
        try:
            certifier().run(answers.CERTIFY, (signature, description))
        except Exception as err:  # fail closed, as for a kernel exercise
            if type(err).__name__ in COMPILE_ERRORS:
                return (f"{exercise.check_name}: a kernel of yours does not compile for a "
                        f"GPU.\n  FAIL  your kernel `{qualname}`, as your `{name}` "
                        f"launches it, does not compile for a GPU with the arguments it "
                        f"was given ({signature}): it raised {type(err).__name__}: "
                        f"{str(err)[:1500]}\n{advice(err)}"), ""
            return not_graded(f"your kernel `{qualname}` could not be compiled for a GPU "
                              f"here ({type(err).__name__}: {str(err)[:300]})")
    return "", ""
