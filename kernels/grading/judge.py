"""The judge: the process that decides a notebook's grade, where none of its code runs.

This is the trusted side of the grader's trust seam. The runner (kernels.grading.runner)
starts one judge per submission, outside the sandbox, from the grader's own copy of the
package. The judge draws a secret for this grading run (kernels.checks.core.SECRET), so
that every case's inputs are new to the notebook, and then, for each exercise, calls the
exercise's checker on an `Answer` (kernels.grading.stand_in): a stand-in for the
student's function, which lives in an answer process of its own (kernels.grading.answers,
in the sandbox, a fresh one per exercise; none for an exercise whose names no statement
of the notebook binds: `unanswered`). The checker builds the cases, the references and
the tolerances here, sends each case's inputs to the answer process as plain data
(kernels.grading.channel), gets the outputs and the launches back (and a race case's
trace, kernels.trace.wire), and compares (and finds the races) here. So the notebook's
code never shares a process with anything that decides its grade: not the cases, not the
comparison, not NumPy's comparison functions, not the registry, not the report, and not
the way results reach the runner, which is this process's own stdout.

The judge prints one JSON line per exercise: {"label", "passed", "report", "flag"},
where "flag" is set when the grader (not the student) could not check something, for
the instructor to look at.
"""

import importlib
import json
import os
import secrets
import sys
import time

from kernels.checks import core
from kernels.grading import answers, compiled, confine
from kernels.grading.stand_in import Answer, AnswerEnded, Forks, Subject

MAX_REPORT_CHARS = 20_000
def kernel_definition(found, names):
    """Why the definition of a kernel exercise's names runs code of the student's (a
    decorator of their own, a computed value), or "": kernels.grading.extract.kernel_only.
    `found`: the notebook's statements (kernels.grading.extract.statements)."""
    from kernels.grading import extract

    return extract.kernel_only(found, names)


def inspect_answer(found, names):
    """Why the answer is not graded automatically, or "", read from its code (parsed,
    never run here). An answer whose code reaches into the grader's own modules, or into
    the interpreter's own objects (frames, the object heap, closures, hooks, raw
    memory), can rewrite, in its own process, the steps that run it: its launches and
    trace could be forged, so it is not graded automatically. Nor is one that asks
    whether it runs on the simulator, which grades only that branch."""
    from kernels.grading import extract, reach

    grader, introspection, flags = reach.reach(extract.needed(found, names))
    if grader:
        return f"its code uses the grader's own modules ({', '.join(grader)}), which no " \
               "answer needs"
    if introspection:
        return f"its code uses {', '.join(introspection)}: the interpreter's own objects, " \
               "which no answer needs and which can forge the record of how it ran"
    if flags:
        return f"its code asks whether it runs on the simulator ({', '.join(flags)}): the " \
               "simulator would grade only its simulator branch, and a GPU runs the other"
    return ""


def not_defined(name, errors=()):
    """The report of an exercise whose `name` the notebook does not define; `errors`:
    those of the statements the answer process ran for it."""
    why = (" Running the statements it needs raised: " + "; ".join(errors[:3]) + "."
           if errors else "")
    return (f"Your notebook defines no `{name}`, a name the exercise asks for (check its "
            "spelling, and that it is defined at the top level of a cell: by a def, an "
            "import or an assignment)." + why)


def unanswered(found, exercises):
    """The `exercises` whose names no statement of the notebook (`found`) binds: the
    answer process would run nothing for them (kernels.grading.answers.load runs what
    extract.needed finds) and find none of their names, so the judge starts none: a
    student who skipped half the exercises costs half the processes."""
    from kernels.grading import extract

    return [ex for ex in exercises if not extract.needed(found, ex.names)]


def limits_reached(report):
    """Mark each failed case of `report` whose error is one that the sandbox's limits
    raise (a thread that could not start, memory refused) as the grader's limit: the
    instructor is told, and the student is not blamed for it."""
    for case in report.cases:
        if not case.passed and confine.says_a_limit(case.detail):
            case.grader_limit = ("a limit of the sandbox (--max-processes, --max-memory) "
                                 f"was reached: {case.description}")
            case.detail += ("\n(that error is the grader's limit on threads or memory, "
                            "not a bug in your code: your instructor will look at it)")


def refusal(exercise, found):
    """(False, report, flag) of `exercise` where the reading of its code (`found`, never
    run) refuses to grade it automatically (inspect_answer, kernel_definition), else
    None: decided before any process runs its code, so a refused answer costs none."""
    name = exercise.names[0]
    blocked = inspect_answer(found, exercise.names) if found else ""
    if exercise.kernel and found and not blocked:
        if why := kernel_definition(found, exercise.names):
            blocked = (f"the definition of `{name}` runs code of yours when it is loaded "
                       f"({why}); a kernel is checked only when it is made by @cuda.jit "
                       "(or cuda.jit(...)) from functions and plain values")
    if not blocked:
        return None
    return False, (f"Not graded automatically: {blocked}. Your instructor will look at "
                   f"your `{name}`."), f"not graded: {blocked}"


def check(exercise, answer, certifier=None, compiler=None):
    """(passed, report, flag) of `exercise` for the student's `answer`, which the reading
    of its code did not refuse (`refusal`, decided first); a kernel is first compiled
    for a GPU by `certifier` (an Answer whose process targets a GPU). With `compiler` (a
    function that returns a certifying Answer where no code of the student's ran:
    kernels.grading.compiled), a host function that passes has every kernel it launched
    compiled there."""
    name = exercise.names[0]
    try:
        missing, errors = answer.missing()
    except Exception as err:  # it ended, timed out, or sent back something else
        return False, f"The grader could not load your `{name}`: {err}", \
            "the answer process did not start"
    if missing:
        return False, not_defined(missing[0], errors), ""
    if certifier is not None:
        try:
            missing, _ = certifier.missing()
            if missing:  # loaded in the answer's process, not where Numba targets a GPU
                raise NameError(f"{missing[0]} is not defined where Numba targets a GPU")
            certifier.run(answers.CERTIFY, (exercise.signature,))
        except Exception as err:  # fail closed: a kernel that was not compiled is not run
            if type(err).__name__ not in compiled.COMPILE_ERRORS:  # the grader's limit
                why = f"kernels could not be compiled for a GPU here ({type(err).__name__}: " \
                      f"{str(err)[:300]})"
                return False, (f"Not graded: {why}. Your instructor will look at your "
                               f"`{name}`."), why
            return False, (f"{exercise.check_name}: your `{name}` does not compile for a GPU "
                           f"with the arguments the exercise gives it ({exercise.signature}): "
                           f"it raised {type(err).__name__}: {str(err)[:1500]}\n"
                           f"{compiled.advice(err)}"), ""
    # its chapter's checkers only: a chapter whose checkers need no Numba spares its import
    checker = getattr(importlib.import_module(f"kernels.checks.{exercise.topic}"),
                      exercise.check_name)
    try:
        report = checker(answer)
    except AnswerEnded as err:
        said = f"The checker could not finish with your `{name}`: {err}"
        if not confine.says_a_limit(str(err)):
            return False, said, ""
        return False, (said + "\n(that is likely a limit of the grader's machine, not a "
                       "bug in your code: your instructor will look at it)"), \
            f"its answer process ended: {err}"
    except Exception as err:  # the checker could not even set up the cases
        return False, (f"The checker could not run your `{name}`: "
                       f"{type(err).__name__}: {err}"), ""
    limits_reached(report)
    if report.hung:  # its process may still be running that code: no other exercise there
        answer.close()
    if report.passed and compiler is not None and not exercise.kernel:
        failed, flag = compiled.certify(exercise, answer, compiler)
        if failed:
            return False, failed, flag
    return report.passed, str(report)[:MAX_REPORT_CHARS], "; ".join(report.grader_limits)


def time_limits(seconds):
    """The checkers' time limits under the grader, from its budget for one check: a
    case's, a first case's more for compiling, and the answer steps' (the answer
    process sets the same: kernels.grading.answers.time_limits)."""
    core.TIME_LIMIT_S = min(core.TIME_LIMIT_S, seconds)
    core.COMPILE_S = min(core.COMPILE_S, seconds)
    answers.time_limits(seconds)


def main():
    import ctypes

    # Not dumpable: no other process of this user (a student's, where there is no
    # sandbox) may read or write this process's memory, or trace it.
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    job = json.loads(sys.stdin.readline())
    core.SECRET = secrets.randbits(128)  # this grading run's cases: known here only
    time_limits(job["check_seconds"])
    from kernels.checks import registry

    from kernels.grading import extract, submissions

    found, _ = extract.statements(
        submissions.read(os.path.join(job["folder"], "submission.ipynb"))["cells"])
    deadline = time.monotonic() + job["seconds"]
    out = sys.stdout
    import kernels

    out.write(json.dumps({"device": kernels.device()["name"]}) + "\n")
    out.flush()
    forks = {target: Forks(job, target) for target in (False, True)}

    def processes(names, kernel_only, gpu_target=False, copies=False):  # one, started
        return Answer(forks[gpu_target].starter(names, kernel_only, copies), names).begin()

    def write(label, passed, report, flag):
        out.write(json.dumps({"label": label, "passed": bool(passed), "report": report,
                              "flag": flag}) + "\n")
        out.flush()

    exercises = [registry.EXERCISES[label] for label in job["labels"]]
    skipped = unanswered(found, exercises)
    refused = {ex.label: result for ex in exercises if ex not in skipped
               if (result := refusal(ex, found))}
    exercises_run = [ex for ex in exercises if ex not in skipped and ex.label not in refused]
    # The kernels whose definitions run no code of the student's share one process
    # (forked again after each exercise's purge): the others get a fresh one each,
    # forked at their turn. On the simulator, one process
    # compiles those kernels for a GPU, and also the kernels that host functions
    # launched, each made again there from its description (kernels.grading.compiled);
    # without kernel exercises, one into which nothing of the notebook is loaded does:
    # no code of the student's runs where a kernel is compiled.
    shareable = [ex for ex in exercises_run if ex.kernel]
    names = [n for ex in shareable for n in ex.names]
    if kernel_definition(found, names):
        shareable, names = [], []
    shared = processes(names, True) if shareable else None
    certifier = (processes(names, True, gpu_target=True)
                 if kernels.SIMULATOR and names else None)
    copier = []

    def certifier_of_copies():  # no code of the student's ever runs in either
        if certifier is not None:  # it loaded only kernels' definitions: no extra start
            return certifier
        if not copier:  # else one that loads nothing, at the first host function's pass
            copier.append(processes(["copies"], False, gpu_target=True, copies=True))
        return copier[0]

    for exercise in exercises:
        label = exercise.label
        if exercise in skipped:
            write(label, False, not_defined(exercise.names[0]), "")
            continue
        if label in refused:
            write(label, *refused[label])
            continue
        if exercise in shareable:
            answer = shared.of(exercise.names)
            kernel_certifier = certifier and certifier.of(exercise.names)
            compiler = None
        else:
            processes_of = [processes(exercise.names, exercise.kernel), processes(
                exercise.names, exercise.kernel, gpu_target=True)
                if kernels.SIMULATOR and exercise.kernel else None]
            answer, kernel_certifier = processes_of
            compiler = (certifier_of_copies if kernels.SIMULATOR and not exercise.kernel
                        else None)
        try:
            if time.monotonic() > deadline - 1:
                result = (False, "not graded: the grader's time limit for this notebook "
                                 "ran out before this exercise",
                          "the grader's time limit ran out")
            else:
                result = check(exercise, answer, kernel_certifier, compiler)
        finally:
            if not isinstance(answer, Subject):
                for process in processes_of:
                    if process is not None:
                        process.close()
        write(label, *result)
        # nothing this exercise's code left meets the next: in the answer processes'
        # sandbox, and in the certifying one where a process of its own loaded its
        # kernels (the others there run no code of the student's, and keep what their
        # first compile set up)
        forks[False].purge()
        if exercise not in shareable and processes_of[1] is not None:
            forks[True].purge()
    for process in (shared, certifier, *copier):
        if process is not None:
            process.close()
    for each in forks.values():
        each.close()


if __name__ == "__main__":
    main()
