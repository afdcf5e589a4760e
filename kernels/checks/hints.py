"""One line from the tracer for a failing exercise: what the reader's threads did.

When a kernel exercise fails, its checker traces the reader's kernel on the first
failing case it can (a launch small enough for the tracer) and adds the most telling
finding to that case's detail: a race, elements never written or written by several
threads, loads that touch far more 32-byte sectors than needed, or, when none of
these shows, that the arithmetic is the likeliest culprit.
"""

import numpy as np

from kernels import trace
from kernels.checks import races, steps
from kernels.checks.core import answer_side

__all__ = []  # used by the checkers, not called by readers
SHOWN = 4  # elements or threads named in one line
MAX_LINE = 2000  # characters of the tracer's line in a report


def attach(report, cases, launch_of, *, gridstride=False, every_element=True):
    """Append the tracer's line to the first failing case of `report` it can trace.

    `cases` are the checker's (description, inputs, expected) in report order;
    `launch_of(inputs)` gives (kernel, configuration, args, output_position) with
    fresh arrays, as the checker launches them. With `gridstride`, a missed element
    is explained by the thread a grid-stride loop gives it. Without `every_element`
    (an in-place exercise, where an element may rightly stay as it is), elements
    never written are not reported."""
    for case, (_, inputs, _) in zip(report.cases, cases):
        if case.passed:
            continue
        if case.always_shown:
            return report  # the traced case failed: it has said what the tracer found
        if case.detail.startswith("your code did not finish"):
            return report  # a hung kernel would hang the tracer too
        kernel, configuration, args, output = launch_of(inputs)
        try:
            t = races.decoded(answer_side(kernel, steps.traced_hint, configuration, args))
        except Exception:  # the process that ran the answer ended: the failure says enough
            return report
        if isinstance(t, tuple):
            if t[0] == "too large":
                continue  # try a smaller failing case
            return report  # the tracer cannot say more than the failure already does
        try:
            line = hint(t, args, output, gridstride, every_element)
        except Exception:  # a trace of another form than the launch's (its arrays)
            return report
        case.detail += f"\n        the tracer: {str(line)[:MAX_LINE]}"
        return report
    return report


def kernel_hint(kernel, configuration, args, output, gridstride=False, every_element=True):
    """The likeliest cause of a wrong result in argument number `output` of
    kernel[configuration](*args), in a sentence: its trace's hint."""
    return hint(trace.launch(kernel, configuration, *args), args, output, gridstride,
                every_element)


def hint(t, args, output, gridstride=False, every_element=True):
    """The likeliest cause of a wrong result in argument number `output` of the launch
    traced in `t`, whose arguments were `args`, in a sentence."""
    launch = t.launch()
    name = list(launch.arrays)[_array_position(args, output)]
    found = trace.races(t)
    if found:
        more = f" ({len(found) - 1} more elements like it)" if len(found) > 1 else ""
        return found[0].describe() + more
    cov = trace.coverage(t, name)
    if not every_element and not cov.writes.any():  # in place: no element is "missed"
        return f"no thread wrote to {name}: your kernel left it as it was"
    if cov.missed and every_element:
        return _missed(launch, cov, name, gridstride)
    if cov.repeated:
        return _repeated(launch, name, cov.repeated[0])
    twice = np.argwhere(cov.writes > 1)
    if len(twice):
        index = tuple(int(i) for i in twice[0])
        return (f"{len(twice)} elements of {name} were written more than once, "
                f"{name}[{_idx(index)}] {int(cov.writes[index])} times by "
                f"{cov.first[index].who()}: each element needs exactly one final write")
    unread = _unread(t, launch, name)
    if unread:
        return unread
    slow = _uncoalesced(t, launch)
    if slow:
        return slow
    every = "every element" if not cov.missed else "every element written"
    return (f"{every} of {name} was written once, by one thread, and no two threads "
            "race, so check the arithmetic (a [1, 1] launch runs your kernel as a plain "
            "loop)")


def _array_position(args, output):
    """Position of argument `output` among the array arguments."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim > 0]
    return arrays.index(output)


def _grid_index(launch, access, dims):
    """cuda.grid(dims) of the thread that made `access`."""
    return tuple(access.block[d] * launch.block[d] + access.thread[d] for d in range(dims))


def _missed(launch, cov, name, gridstride):
    missed = cov.missed
    shown = ", ".join(f"{name}[{_idx(i)}]" for i in missed[:SHOWN])
    more = f" and {len(missed) - SHOWN} more" if len(missed) > SHOWN else ""
    head = (f"{len(missed)} elements were never written ({shown}{more})" if len(missed) > 1
            else f"{shown} was never written")
    if not gridstride:
        return head
    size = tuple(launch.grid[d] * launch.block[d] for d in range(len(missed[0])))
    # The thread a grid-stride loop gives the first missed element: index mod grid size,
    # x along the last axis.
    owner = tuple(i % s for i, s in zip(reversed(missed[0]), size))
    wrote = [a.index for a in launch.of(name, ("write", "atomic"))
             if _grid_index(launch, a, len(owner)) == owner]
    did = (f"wrote {', '.join(f'{name}[{_idx(i)}]' for i in wrote[:SHOWN])}"
           + (" ..." if len(wrote) > SHOWN else "") if wrote else "wrote nothing")
    grid = " x ".join(str(s) for s in size)
    threads = "thread" if np.prod(size) == 1 else "threads"
    return (f"{head}. With {grid} {threads}, a grid-stride loop gives "
            f"{name}[{_idx(missed[0])}] to the thread at cuda.grid() = {_idx(owner)}, "
            f"which {did}")


def _repeated(launch, name, index):
    writers = []
    for a in launch.of(name, ("write", "atomic")):
        if a.index == index and a.who() not in writers:
            writers.append(a.who())
    listed = ", ".join(writers[:SHOWN]) + (" ..." if len(writers) > SHOWN else "")
    return (f"{name}[{_idx(index)}] was written by {len(writers)} threads ({listed}); "
            "each element needs exactly one")


def _unread(t, launch, output):
    """Input elements no thread read: every input element counts in these exercises."""
    for name, info in launch.arrays.items():
        if name == output or info["space"] != "global" or info.get("same_as"):
            continue
        missed = trace.coverage(t, name, kinds=("read",)).missed
        if missed:
            shown = ", ".join(f"{name}[{_idx(i)}]" for i in missed[:SHOWN])
            more = f" and {len(missed) - SHOWN} more" if len(missed) > SHOWN else ""
            return (f"no thread read {shown}{more}, so {output} cannot depend on "
                    f"{'them' if len(missed) > 1 else 'it'}")
    return None


def _uncoalesced(t, launch):
    for name, info in launch.arrays.items():
        if info["space"] != "global" or info.get("same_as"):
            continue
        for kind in ("read", "write"):
            if not launch.of(name, (kind,)):
                continue
            count = trace.sectors(t, name, kind=kind)
            if count.mean >= 2 * count.mean_ideal and count.mean - count.mean_ideal >= 2:
                return "your " + count.describe()
    return None


def _idx(index):
    return ", ".join(str(i) for i in index)
