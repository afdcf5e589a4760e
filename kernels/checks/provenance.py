"""Whether a host function's result comes from its kernels: the two cases that
kernels.checks.core.run_cases adds for an exercise that asks for a kernel, once every
other case has passed.

* `unlaunched`: the answer run again with every launch of its kernels skipped must not
  give the right result (one computed on the host with NumPy does).
* `swapped`: the answer run again with other data in its kernels' arrays, where the
  case's input was (kernels.checks.swaps, in the answer's process), its host keeping the
  original, must not give the original's result: a result a kernel merely carries to
  the output, or that the host computes from a copy of the input a kernel handed back,
  does.

Both are decided here, beside the cases (the judge's side under the grader); the answer
side only runs the step as asked (kernels.checks.steps.unlaunched, .swapped), which
answer_side arranges while WITHOUT_KERNELS or SWAPPING is on. Each returns the fields of
a kernels.checks.core.Case.
"""

import numpy as np

from kernels.checks import launches, swaps
from kernels.checks.steps import TimeLimitExceeded, call_with_time_limit
from kernels.harness import check, matching, to_host

__all__ = []  # run by kernels.checks.core, not called by readers

UNLAUNCHED = "the result comes from your kernels (with them skipped, it is wrong)"
SWAPPED = "the result follows the data your kernels read (given other data, it changes)"


def _passed(description, hung=False):
    """A pass that an answer doing nothing earns too (Case.trivial)."""
    return dict(description=description, passed=True, detail="", trivial=True, hung=hung)


def _failed(description, detail, grader_limit=""):
    return dict(description=description, passed=False, detail=detail,
                grader_limit=grader_limit)


class _WithoutKernels:
    """Within it, answer_side runs each step unlaunched (`unlaunched`)."""

    def __init__(self):
        self.on = False

    def __enter__(self):
        self.on = True

    def __exit__(self, *exc):
        self.on = False
        launches.skip(False)  # a local step stopped at its time limit may have left it on


WITHOUT_KERNELS = _WithoutKernels()


class _Swapping:
    """What answer_side does for `swapped`: within `swapping(inputs, others)`, run each
    step `swapped`, each of its array arguments that is one of `inputs` (or a copy of
    one) given the matching array of `others` as its alternate."""

    def __init__(self):
        self.pairs = None
        self.found = self.echoed = self.handed_back = self.threads = 0

    def add(self, found, echoed, handed_back, threads):
        """A swapped step's counts (kernels.checks.steps.swapped), as plain numbers."""
        numbers = [n if isinstance(n, int) else 0 for n in (found, echoed, handed_back, threads)]
        self.found += numbers[0]
        self.echoed, self.handed_back = self.echoed + numbers[1], self.handed_back + numbers[2]
        self.threads = max(self.threads, numbers[3])

    def next(self, args):
        """The alternates of a step's arguments (None for each that is no input)."""
        def alternate(arg):
            return next((other for given, other in self.pairs
                         if isinstance(arg, np.ndarray) and arg.shape == given.shape
                         and arg.dtype == given.dtype
                         and arg.tobytes() == given.tobytes()), None)
        return tuple(map(alternate, args))

    def swapping(self, inputs, others):
        self.pairs = [(i, o) for i, o in zip(inputs, others) if isinstance(i, np.ndarray)]
        self.found = self.echoed = self.handed_back = self.threads = 0
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.pairs = None


SWAPPING = _Swapping()


def varied(expected, most=None):
    """How many distinct values other than 0, 1, -1 and non-finite ones an output holds
    (among `most` of its elements, evenly spaced, where given: a GPU's cases run to
    millions of elements, and choosing one of them needs no sort of each): an answer
    whose kernels did nothing could give zeros, an empty output, an index 0."""
    values = np.asarray(expected, dtype=np.float64).ravel()
    if most is not None:
        values = values[::max(1, values.size // most)]
    values = np.unique(values)
    return int((np.isfinite(values) & ~np.isin(values, (0, 1, -1))).sum())


def unlaunched(run, cases, rtol, atol, seconds):
    """The case that asks whether the result comes from the answer's kernels: run(inputs)
    of the case with the most varied output, with every kernel launch skipped, must not
    give its expected output. Every array the answer makes empty is poisoned then
    (unlaunched), so none holds that output from an earlier call; and the case is not
    the last one run, whose output a buffer the answer keeps between calls would still
    hold. An answer that waits
    for its kernels (a loop until they are done) does not return: that passes, and its
    process, which still waits, is not used again (Case.hung)."""
    _, inputs, expected = max(cases[:-1] or cases, key=lambda case: varied(case[2], 4096))
    try:
        with WITHOUT_KERNELS:
            got = call_with_time_limit(run, inputs, seconds=seconds)
        check(got, expected, name="your result", rtol=rtol, atol=atol)
    except TimeLimitExceeded:  # it waits for the kernels that never ran
        return _passed(UNLAUNCHED, hung=True)
    except Exception:  # wrong, or failed, without its kernels: they do the work
        return _passed(UNLAUNCHED)
    return _failed(UNLAUNCHED, (
        "your answer returned the right result even when none of your kernels ran, so the "
        "result was computed on the host (with NumPy or Python), not by your kernel: the "
        "exercise asks for a kernel that computes it"))


def _other_inputs(inputs, rng):
    """Inputs of the same shapes and kinds as `inputs` (a tuple, or one array), with
    other values taken from theirs, so that any constraint on the values holds: each
    integer array drawn from its own elements; each float array shuffled, and half of its
    elements halved (a sum, a mean, a maximum all change). Numbers stay as they are."""
    def other(x):
        if not isinstance(x, np.ndarray) or x.size < 2:
            return x
        flat = x.ravel()
        if x.dtype.kind == "f":
            flat = rng.permutation(flat)
            flat[rng.random(flat.size) < 0.5] *= 0.5
        else:
            flat = flat[rng.integers(0, flat.size, flat.size)]
        return flat.reshape(x.shape)
    return tuple(map(other, inputs)) if isinstance(inputs, tuple) else other(inputs)


def _largest(case):
    """The size of a case's largest input array that can be found (swaps.MIN_RUN long,
    not all one value), or 0."""
    inputs = case[1] if isinstance(case[1], tuple) else (case[1],)
    return max((x.size for x in inputs if isinstance(x, np.ndarray)
                and x.size >= swaps.MIN_RUN and (x.ravel() != x.flat[0]).any()), default=0)


def swapped(run, cases, rtol, atol, seconds, rng):
    """The case that asks whether the result follows what the answer's kernels read.
    run(inputs) of the smallest case where it tells, with the input swapped in the
    kernels' arrays for other data of its size and kind (swaps, drawn here), the host
    keeping the original, must not give the original's result where the other data's
    differs from it (the answer is run on that data too, where that is to be told): a
    result computed on the host from its own copy does. Nor may the kernels hand the
    swapped-in input back to the host as it was, for the host to compute with: half of
    it or more, counted in each array that holds more of it than the answer's largest
    launch has threads (a thread with one element to reduce rightly hands it back as its
    partial result; where that may be all there is, the next case with more elements
    than threads tells). An answer that raises, or does not return, then passes (each
    case has tested it already)."""
    # smallest first, and no input sorted to tell whether it is all one value (NumPy's
    # unique took 15 s for an int32 input of 20 million: minutes for a streams
    # checker's cases on a GPU); whether the output tells is asked of the cases reached
    threads, first = 0, True
    for size, index in sorted((_largest(case), i) for i, case in enumerate(cases)):
        if size <= threads or not varied(cases[index][2]):
            continue  # nothing to find; or as many threads as elements: an echo tells nothing
        ran = _swapped_run(run, *cases[index][1:], rtol, atol, seconds, rng, first=first)
        first = False
        if isinstance(ran, dict):
            return ran
        echoed, handed_back, threads = ran
        if 2 * handed_back < size:
            break
        if 2 * echoed >= size:
            return _failed(SWAPPED, (
                f"your kernels handed the input back to the host unchanged ({echoed:,} "
                "elements copied back from device memory as they were given): the result "
                "was computed on the host from that copy (with NumPy or Python), not by "
                "your kernels. The exercise asks for a kernel that computes it."))
    return None if first else _passed(SWAPPED)


def _swapped_run(run, inputs, expected, rtol, atol, seconds, rng, first):
    """(elements echoed, handed back in all, the most threads of a launch) of
    run(inputs) swapped (kernels.checks.steps.swapped), or the
    case's verdict where that run decides it (on the `first` case run so). The answer is
    run on the other data as well only where the swapped run's result is mostly the
    original's, to tell whether the other data changes it."""
    other = _other_inputs(inputs, rng)
    pairs = (inputs, other) if isinstance(inputs, tuple) else ((inputs,), (other,))
    try:
        with SWAPPING.swapping(*pairs):
            got = call_with_time_limit(run, inputs, seconds=seconds)
            counts = SWAPPING.echoed, SWAPPING.handed_back, SWAPPING.threads
            found = SWAPPING.found
        followed = first and _mostly(got, expected, rtol, atol) and _followed_host(
            got, call_with_time_limit(run, other, seconds=seconds), expected, rtol, atol)
    except TimeLimitExceeded:
        return _passed(SWAPPED, hung=True)
    except Exception:  # it fails with other data: the cases tell how it works
        return _passed(SWAPPED)
    if not followed:
        return counts
    unseen = "" if found else (
        " The grader found no part of the input among your kernels' arrays: if they "
        "read it in a form the grader does not recognise, your instructor will look.")
    return _failed(SWAPPED, (
        f"the grader gave your kernels other data in place of the input (the host kept "
        f"the original), and {followed} of your result came out as for the original "
        "input: the result was computed on the host (with NumPy or Python), not by your "
        "kernels. The exercise asks for a kernel that computes it." + unseen),
        "" if found else (
            "the input was not found in the kernels' arrays, and the result did not "
            "change when the grader changed the kernels' data: read the answer to see "
            "whether it computes the result on the host"))


def _mostly(got, expected, rtol, atol):
    """Whether half of `got`'s values or more equal `expected`'s (of one shape)."""
    got, expected = np.asarray(to_host(got)), np.asarray(expected)
    return got.shape == expected.shape and 2 * int(
        matching(got, expected, rtol=rtol, atol=atol)[0].sum()) >= max(expected.size, 1)


def _followed_host(got, theirs, expected, rtol, atol):
    """How much of `got` (run with the input swapped in the kernels' arrays) equals
    `expected` (the original input's result) where `theirs` (the other data's result)
    does not, in words ("3 of the 4 values"), when that is half of such values or more;
    else ""."""
    got, theirs, expected = (np.asarray(to_host(a)) for a in (got, theirs, expected))
    if got.shape != expected.shape:
        return ""
    same, _ = matching(got, expected, rtol=rtol, atol=atol)
    moved = ~matching(theirs, expected, rtol=rtol, atol=atol)[0] \
        if theirs.shape == expected.shape else np.ones(same.shape, bool)
    followed, told = int((same & moved).sum()), int(moved.sum())
    if not told or 2 * followed < told:
        return ""
    return "its one value that other data changes" if told == 1 else (
        f"{followed:,} of the {told:,} values that other data changes")
