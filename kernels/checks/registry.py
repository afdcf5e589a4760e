"""Every exercise of the book in one table: its label, checker, required names, points.

The book's exercise text, the grader (``python -m kernels grade``) and the tracer's
feedback all read this table, so an exercise is described once. A label is the
``:label:`` of the exercise in ``book/<chapter>.md``; ``names`` are the functions
the exercise text asks the student to define, the first one being what the checker
is called on; points follow the difficulty the title gives (easy 1, medium 2,
harder 3); ``launch`` says which kernel launches the checker demands of every case
(see kernels.checks.launches): ``YOURS``, a kernel the student wrote; ``ANY``, any
kernel but the course's solutions (the streams exercises are about streams and may
launch the course's vector add); None, none (a host computation).

The table names each checker (``checks.<check_name>``) and imports none of them: the
checkers' shared machinery (kernels.checks.core) reads the launch rule here, so this
module is a leaf the checkers depend on, never the other way round.
"""

import dataclasses

from kernels.checks.launches import ANY, YOURS

__all__ = []  # kernels.checks gathers checkers, not this table: import it by name

POINTS = {"easy": 1, "medium": 2, "harder": 3}
# chapter -> the module of kernels.checks (and of kernels.solutions) that holds its
# exercises, where the two names differ
TOPIC = {"atomics": "histogram"}


@dataclasses.dataclass(frozen=True)
class Exercise:
    label: str  # the exercise's :label: in the book
    chapter: str  # book/<chapter>.md
    difficulty: str  # a key of POINTS, as the exercise's title says
    check_name: str  # the checker readers call, checks.<check_name>(the student's function)
    names: tuple  # what the student defines; the checker gets getattr(ns, names[0])
    kernel: bool  # True: names[0] is a @cuda.jit kernel; False: a host function
    launch: str = YOURS  # YOURS, ANY or None: the launches every case must make
    signature: str = ""  # a kernel's: the types its checker launches it with


    def __post_init__(self):
        if self.kernel != bool(self.signature):
            raise ValueError(f"{self.label}: a kernel exercise needs its signature, and "
                             "only a kernel exercise has one")

    @property
    def points(self):
        return POINTS[self.difficulty]

    @property
    def topic(self):
        """The module of kernels.checks that holds its checker (kernels.solutions: its
        solution)."""
        return TOPIC.get(self.chapter, self.chapter)


# The kernel exercises' argument types, as their checkers launch them: the grader
# compiles each answer for a GPU with them (kernels.grading.judge).
SIGNATURES = {
    "gridstride-ex-saxpy": "void(float32, float32[::1], float32[::1], float32[::1])",
    "gridstride-ex-clip": "void(float64[:, ::1], float64, float64, float64[:, ::1])",
    "gridstride-ex-reverse": "void(int32[::1])",
    "cooperative-ex-rotate": "void(int32[:, ::1])",
    "cooperative-ex-normalize": "void(float32[::1], float32[::1], float32[::1])",
    "matmul-ex-transpose": "void(float32[:, ::1], float32[:, ::1])",
    "matmul-ex-matvec": "void(float32[:, ::1], float32[::1], float32[::1])",
}


def _exercises(*rows):
    table = {}
    for label, difficulty, check_name, names, kernel, *launch in rows:
        chapter = label.split("-ex-")[0]
        table[label] = Exercise(label, chapter, difficulty, check_name, tuple(names), kernel,
                                *(launch or [YOURS]), SIGNATURES.get(label, ""))
    return table


EXERCISES = _exercises(
    ("gridstride-ex-saxpy", "easy", "saxpy", ["saxpy_kernel"], True),
    ("gridstride-ex-clip", "medium", "clip_2d", ["clip_2d_kernel"], True),
    ("gridstride-ex-reverse", "harder", "reverse_inplace", ["reverse_inplace_kernel"], True),
    ("atomics-ex-256", "easy", "histogram_256", ["histogram_256"], False),
    ("atomics-ex-words", "medium", "word_length_histogram", ["word_length_histogram"], False),
    ("atomics-ex-positions", "harder", "positions_of", ["positions_of"], False),
    ("reduction-ex-mean-variance", "easy", "mean_variance", ["mean_variance"], False),
    ("reduction-ex-argmax", "medium", "argmax", ["argmax"], False),
    ("reduction-ex-kahan", "medium", "kahan_sum", ["kahan_sum"], False),
    ("reduction-ex-topk", "harder", "topk", ["topk"], False),
    ("mutex-ex-deadlock", "easy", "lock_sum_positive", ["sum_positive"], False),
    ("mutex-ex-argmax", "medium", "lock_argmax", ["my_argmax"], False),
    ("mutex-ex-bins", "harder", "lock_bin_product", ["my_bin_product"], False),
    ("streams-ex-one-stream", "easy", "stream_add", ["stream_add"], False, ANY),
    ("streams-ex-chunked", "medium", "chunked_streams_add", ["chunked_streams_add"], False, ANY),
    ("streams-ex-bounded", "harder", "bounded_streams_add", ["bounded_streams_add"], False, ANY),
    ("cooperative-ex-rotate", "easy", "rotate_rows", ["rotate_rows_kernel"], True),
    ("cooperative-ex-normalize", "medium", "normalize_by_max", ["normalize_by_max_kernel"], True),
    ("cooperative-ex-converge", "harder", "jacobi_until_converged", ["jacobi_until_converged"],
     False),
    ("matmul-ex-choose-tile", "easy", "choose_tile", ["choose_tile"], False, None),
    ("matmul-ex-transpose", "medium", "tiled_transpose", ["transpose_tiled_kernel"], True),
    ("matmul-ex-matvec", "harder", "tiled_matvec", ["matvec_tiled_kernel"], True),
)


def by_chapter(chapter):
    """The exercises of one chapter, in book order."""
    return [ex for ex in EXERCISES.values() if ex.chapter == chapter]


def by_check_name(name):
    """The exercise whose checker is called `name` (a Report's exercise), or None."""
    return next((ex for ex in EXERCISES.values() if ex.check_name == name), None)
