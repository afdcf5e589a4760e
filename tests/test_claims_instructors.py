"""Claims of instructors.md about what the grader was measured to do: the mutants
graded on a GPU (tests/mutation_results_gpu.json) and the cheats it withstands
(tests/cheats.py). The simulator's mutants table is kept by tests/test_mutants.py.

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite.
"""

import json
import pathlib
import re

import cheats
import mutation_runs

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = (ROOT / "book" / "instructors.md").read_text()
WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen", "twenty")


def _paragraph(start):
    at = PAGE.index(start)
    return PAGE[at:PAGE.index("\n\n", at)]


def test_instructors_gpu_survivors_are_the_ones_the_results_file_holds():
    """instructors.md: "The same mutants were graded on a GPU too ... on an NVIDIA H200
    (all of them again on 2026-11-28, in 301 s ...) ... There two wrong answers got the
    points, both killed on the simulator: ..." (the count, the device, the date, the time
    and each survivor's exercise)."""
    gpu = json.loads(mutation_runs.RESULTS.with_name("mutation_results_gpu.json").read_text())
    sim = json.loads(mutation_runs.RESULTS.read_text())["mutants"]
    survived = sorted(name for name, r in gpu["mutants"].items()
                      if mutation_runs.verdict_of(name, r["points"], r.get("flag", ""))
                      == "survived")
    said = " ".join(_paragraph("The same mutants were graded on a GPU too").split())
    assert f"There {WORDS[len(survived)]} wrong answers got the points" in said, survived
    assert gpu["device"].replace("NVIDIA H100 80GB HBM3", "NVIDIA H100") in said
    assert gpu["date"] in said and f"in {gpu['seconds']} s" in said
    for name in survived:
        assert f"`{name.split(':')[0]}`" in said, name
        assert sim[name]["points"] == 0, f"{name} is not killed on the simulator"


def test_instructors_the_cheats_counted_are_the_ones_tested():
    """instructors.md: "`tests/cheats.py` holds thirty such cheats. All
    thirty earn nothing" (tests/test_grading.py grades every one of cheats.CASES
    and expects nothing for it)."""
    said = " ".join(PAGE.split())
    found = re.search(r"`tests/cheats\.py` holds ([\w-]+) such cheats\. All ([\w-]+) earn "
                      r"nothing", said)
    count = _number(len(cheats.CASES))
    assert found and found.groups() == (count, count), found and found.groups()


def _number(n):
    tens, ones = divmod(n, 10)
    if n <= 20:
        return WORDS[n]
    name = ("twenty", "thirty", "forty")[tens - 2]
    return name + (f"-{WORDS[ones]}" if ones else "")


def test_instructors_no_fence_is_listed_as_beyond_the_simulator():
    """instructors.md says the tracer orders a lock's accesses "only with both its
    fences ... a lock without either races": the simulator kills both fence-removed
    mutants of every lock exercise, so no fence belongs in "What only a GPU shows"."""
    sim = json.loads(mutation_runs.RESULTS.read_text())["mutants"]
    fences = {name: r for name, r in sim.items() if name.split(":")[1].startswith(
        "fence-removed@")}
    assert {n.split("@")[1] for n in fences} >= {"lock", "unlock"}
    assert all(r["points"] == 0 for r in fences.values()), fences
    gpu_only = PAGE[PAGE.index("What only a GPU shows"):PAGE.index("(checkers-proven-by-mutants)")]
    assert "fence" not in gpu_only


def test_instructors_the_simulators_concurrency_is_the_modules():
    """instructors.md: "lands late for the first two releases of each block in each array
    of locks: the next four tries for that lock ... find it taken" and "On a GPU,
    `histogram_256` also counts 5,000,011 equal bytes" (kernels.simulator_concurrency's
    DEFERRED_RELEASES and TRIES; the checker's GPU case)."""
    import inspect

    from kernels import simulator_concurrency
    from kernels.checks import histogram

    said = " ".join(PAGE.split())
    late, tries = simulator_concurrency.DEFERRED_RELEASES, simulator_concurrency.TRIES
    assert (f"lands late for the first {WORDS[late]} releases of each block in each array "
            f"of locks: the next {WORDS[tries]} tries for that lock") in said
    gpu_case = re.search(r"np\.full\(([\d_]+), 97", inspect.getsource(histogram.histogram_256))
    size = int(gpu_case.group(1).replace("_", ""))
    assert f"`histogram_256` also counts {size:,} equal bytes" in said


def test_instructors_a_stopped_forking_process_costs_the_reply_wait():
    """instructors.md: "One that stops it (SIGSTOP) costs the notebook the judge's wait
    for a reply, 15 s, and a fresh one takes over" (a later reply's limit,
    kernels.grading.stand_in.FORKS_REPLY_S)."""
    from kernels.grading import stand_in

    said = " ".join(PAGE.split())
    assert (f"costs the notebook the judge's wait for a reply, "
            f"{stand_in.FORKS_REPLY_S[1]:g} s, and a fresh one takes over") in said
