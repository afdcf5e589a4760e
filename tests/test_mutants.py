"""Every checker against mutants of its reference solution (tests/mutant_set.py).

`make mutants` grades every mutant through the real grader on the simulator and keeps
the verdicts in tests/mutation_results.json; here each recorded verdict is a test (a
mutant that survives fails; on a GPU's record, a strict xfail in GPU_SURVIVORS with why), the results
file and the instructors page's table must match the mutants the generator makes now,
and one round of mutants is graded again, so that a checker changed since the last
`make mutants` shows. The operators themselves are tested on small sources.
"""

import ast
import json
import os

import pytest

import kernels
import mutant_set
import mutants
import mutation_runs
from kernels.checks import registry

# On the lent GPU (tests/mutation_results_gpu.json: every mutant graded there with
# NUMBA_ENABLE_CUDASIM=0), the mutants that get the points, and why
OUT_OF_BOUNDS_READ = ("a bound off by one that lets a thread read one element past an "
                      "input: a GPU reads it without a fault, and the value never reaches "
                      "the output (the tile slot it fills is read back only by a thread "
                      "whose write is out of bounds and skipped), so no guard band can "
                      "change the result; the simulator's IndexError kills it")
SWAPPED_ON_GPU = ("blocks and threads swapped in the launch: on a GPU the swapped grid "
                  "still fits and covers the data (the simulator's smaller limits kill it)")
GPU_SURVIVORS = {
    "cooperative-ex-converge:indices-swapped@jacobi_until_converged": SWAPPED_ON_GPU,
    "matmul-ex-transpose:bound-flipped@transpose_tiled_kernel#1": OUT_OF_BOUNDS_READ,
}
GPU_RESULTS = mutation_runs.RESULTS.with_name("mutation_results_gpu.json")
GPU_RECORDED = json.loads(GPU_RESULTS.read_text())

RECORDED = json.loads(mutation_runs.RESULTS.read_text()) if mutation_runs.RESULTS.exists() \
    else {"mutants": {}}
# Which half round to grade again: MUTANTS_SAMPLE=s grades round s // 2, the mutants of
# every other exercise (s even: the first, third, ...), so that the suite fits its
# budget; `make mutants` grades them all
SAMPLE = int(os.environ.get("MUTANTS_SAMPLE", "0"))


def apply(source, operator, site=0, function="f"):
    change, _, together = mutants.OPERATORS[operator]
    return mutants.mutated(source, function, change, None if together else site)


KERNEL = '''
from numba import cuda


@cuda.jit
def f(x, hist, out):
    s = cuda.shared.array(4, 'int32')
    stride = cuda.gridsize(1)
    for i in range(cuda.grid(1), x.size, stride):
        cuda.atomic.add(s, x[i], 1)
    if cuda.threadIdx.x < 4:
        out[cuda.threadIdx.x] = 0
    cuda.syncthreads()
    slot = cuda.atomic.add(hist, 0, 1)
    out[slot, 1] = s[0]
'''


@pytest.mark.parametrize("operator, expected", [
    ("barrier-removed", "out[cuda.threadIdx.x] = 0\n    slot"),
    ("barrier-in-branch", "out[cuda.threadIdx.x] = 0\n        cuda.syncthreads()"),
    ("atomic-as-plain", "s[x[i]] = s[x[i]] + 1"),
    ("stride-of-block", "stride = cuda.blockDim.x"),
    ("stride-none", "range(cuda.grid(1), min(cuda.grid(1) + 1, x.size))"),
    ("bound-flipped", "if cuda.threadIdx.x <= 4"),
    ("range-short", "range(cuda.grid(1), x.size - 1, stride)"),
    ("indices-swapped", "out[1, slot]"),
    ("shared-as-local", "cuda.local.array(4, 'int32')"),
])
def test_an_operator_makes_its_mistake(operator, expected):
    source, sites = apply(KERNEL, operator)
    assert sites >= 1 and expected in source, source


def test_an_atomic_whose_old_value_is_used_becomes_a_read_then_a_write():
    source, _ = apply(KERNEL, "atomic-as-plain", site=1)
    assert "slot = hist[0]\n    hist[0] = slot + 1" in source, source


def test_streams_locks_and_fences_are_mutated():
    host = '''
@cuda.jit
def k(x):
    pass


def f(a, out, chunks, stream):
    d_a = cuda.to_device(a, stream=stream)
    k[1, 32, stream](d_a[lo:hi])
    stream.synchronize()
'''
    assert "cuda.to_device(a)" in apply(host, "stream-dropped")[0]
    assert "k[1, 32](" in apply(host, "stream-dropped", site=1)[0]
    assert "d_a[:hi - lo]" in apply(host, "one-buffer")[0]
    assert "synchronize" not in apply(host, "sync-removed")[0]
    locked = '''
def take(m):
    while cuda.atomic.cas(m, 0, 0, 1) != 0:
        pass
    cuda.threadfence()


def give(m):
    cuda.atomic.exch(m, 0, 0)


def f(m, total):
    if take(m):
        total[0] += 1
        give(m)
'''
    assert "if True:" in apply(locked, "lock-removed")[0]
    assert apply(locked, "unlock-removed")[0].count("give(m)") == 1  # its def only
    assert "threadfence" not in apply(locked, "fence-removed", function="take")[0]


@pytest.fixture(scope="module")
def generated():
    """Every mutant, made now (the looked-up ones run each checker's case generation:
    made once per module, not at collection)."""
    return mutant_set.all_mutants()


def test_every_exercise_has_mutants_and_every_mistake_is_made(generated):
    by_label = {label: [m for m in generated if m.label == label] for label in registry.EXERCISES}
    assert all(len(ms) >= 3 for ms in by_label.values()), \
        {k: len(v) for k, v in by_label.items()}
    made = {m.operator for m in generated}
    expected = set(mutants.OPERATORS) | {"index-16-bit", "looked-up"} | {
        name for entries in mutant_set.HAND.values() for name, _, _ in entries}
    assert expected <= made, expected - made


def test_every_mutant_is_python_and_differs_from_the_solution(generated):
    for m in generated:
        ast.parse(m.source)
        assert m.source != mutant_set.solution(mutant_set.planted.topic(m.label)), m.name
    names = {m.name for m in generated}
    assert len(names) == len(generated)
    assert set(mutant_set.EQUIVALENT) <= names and set(GPU_SURVIVORS) <= names


def test_the_results_file_is_of_these_mutants(generated):
    """A changed solution, operator or helper changes the mutants: `make mutants`."""
    recorded = {name: r["digest"] for name, r in RECORDED["mutants"].items()}
    assert recorded == {m.name: m.digest for m in generated}, "run `make mutants`"


def test_the_instructors_page_shows_the_results():
    assert mutation_runs.page_table() == mutation_runs.table(RECORDED), "run `make mutants`"


@pytest.mark.parametrize("name", RECORDED["mutants"])
def test_no_mutant_survives(name):
    """Recorded by `make mutants`: killed, or equivalent and given the points."""
    record = RECORDED["mutants"][name]
    wanted = "equivalent" if name in mutant_set.EQUIVALENT else "killed"
    assert mutation_runs.verdict_of(name, record["points"], record.get("flag", "")) == wanted, \
        record


@pytest.fixture(scope="module")
def sample_grades(generated, tmp_path_factory):
    groups = mutation_runs.rounds(generated)
    group = groups[SAMPLE // 2 % len(groups)][SAMPLE % 2::2]
    return group, mutation_runs.grade(group, tmp_path_factory.mktemp("mutants"))


def expected_points(name):
    """On the simulator, what `make mutants` recorded; on a GPU, 0 unless equivalent."""
    if kernels.SIMULATOR:
        return RECORDED["mutants"].get(name, {}).get("points")
    label = name.split(":")[0]
    return registry.EXERCISES[label].points if name in mutant_set.EQUIVALENT else 0


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=GPU_SURVIVORS[name]))
    if name in GPU_SURVIVORS else name for name in GPU_RECORDED["mutants"]])
def test_no_mutant_survives_on_the_gpu(generated, name):
    """Recorded on the lent GPU: killed, or equivalent and given the points. A mutant
    whose source changed since is skipped until the GPU grades it again."""
    record = GPU_RECORDED["mutants"][name]
    now = {m.name: m.digest for m in generated}
    if now.get(name) != record["digest"]:
        pytest.skip(f"{name} changed since the GPU run of {GPU_RECORDED['date']}")
    wanted = "equivalent" if name in mutant_set.EQUIVALENT else "killed"
    assert mutation_runs.verdict_of(name, record["points"], record.get("flag", "")) == wanted, \
        record


def test_a_round_of_mutants_gets_the_recorded_verdicts_again(sample_grades):
    """The checkers as they are now give the verdicts `make mutants` recorded (on a GPU:
    every mutant but the equivalent ones scores 0), for half a round (SAMPLE)."""
    group, found = sample_grades
    changed = {m.name: (expected_points(m.name), found[m.name]["points"],
                        found[m.name]["evidence"] or "no check failed")
               for m in group if expected_points(m.name) != found[m.name]["points"]}
    assert not changed, changed
