"""Claims of mutex.md about recorded measurements, one test per claim, run on every
recording kept and on copies perturbed inside their noise (tests/claims.py).

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite (or to glue from the recording).
"""

from claims import med, rec, recording  # noqa: F401 (recording: the autouse fixture)
from kernels import compare


def _gpu_max_spins():
    """locks.MAX_SPINS as a GPU run sets it (this process may run on the simulator)."""
    import ast
    import inspect
    from kernels import locks
    for node in ast.walk(ast.parse(inspect.getsource(locks))):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MAX_SPINS":
            return eval(compile(ast.Expression(node.value.orelse), "MAX_SPINS", "eval"),
                        {"__builtins__": {}})
    raise AssertionError("locks.MAX_SPINS not found")


def test_mutex_spin_bound_covers_the_longest_recorded_queue():
    """mutex.md: "An honest wait is far shorter: ... on the H100 of the recordings that
    whole queue takes ... ms"; kernels/mutex.py: "On the H100 that whole queue takes about
    a quarter of a second ..., less than 2**22 tries of 0.2 us"."""
    cont = rec("mutex.contention")
    longest = max(med(r) for r in cont.rows(name="dot_mutex"))
    assert longest * 1e-3 < _gpu_max_spins() * 0.2e-6


def test_mutex_lock_cost_grows_with_holders_and_an_atomic_is_cheaper():
    """mutex.md: "With one block per SM a lock costs about ... ns per holder ... With ...
    blocks it costs ... ns per holder, most likely because the waiting threads hammer
    the same address ... An atomic add needs no round trip"."""
    cost = rec("mutex.lock_cost")
    sms = cost.entry["params"]["sm_count"]
    one, many = (cost.get("add_one_mutex", blocks=k * sms)["ns_per_block"] for k in (1, 64))
    assert many > 2 * one
    assert cost.get("add_one_atomic", blocks=64 * sms)["ns_per_block"] < one / 10


def _rendered(dot):
    import claims
    floor_us = (2 * 4 * dot.entry["params"]["n"] / dot.limits["copy_gbps"] / 1e3
                + 1e3 * dot.limits.get("kernel_ms", 0))
    from kernels import mutex
    return claims.render("mutex", "kernel_rows = dot.rows", dot=dot, compare=compare,
                         mutex=mutex, rows=dot.entry["rows"], floor_us=floor_us)


def _rendered_contention(cont):
    import claims
    return claims.render("mutex", 'mrows = {r["blocks"]', cont=cont, compare=compare)


def _gpu_peers(dot):
    return [r for r in dot.rows(kind="peer") if "CPU" not in r["name"]]


def test_mutex_float_atomic_beats_the_lock_and_matches_the_best_peer_as_said():
    """mutex.md summary: "For sums, a float atomic per block is faster than a lock, and
    [phrase] the fastest library dot, [peer] (device-busy times, where recorded)"."""
    import claims
    dot = rec("mutex.dot")
    atomic = dot.get("dot_atomic")
    assert compare.verdict(atomic, dot.get("dot_mutex")) == "faster"
    said = _rendered(dot)["atomic_vs_peer"]
    peers = _gpu_peers(dot)
    peer = next(r for r in peers if said.endswith(r["name"]))
    ahead = claims.fair_ms(peer, atomic) / claims.fair_ms(atomic, peer)
    assert all(ahead <= claims.fair_ms(r, atomic) / claims.fair_ms(atomic, r) for r in peers)
    assert claims.agrees(said, claims.fair_ms(atomic, peer), claims.fair_ms(peer, atomic))


def test_mutex_dot_against_the_fastest_library_dot_measured_alike():
    """mutex.md: "The fastest reduction done entirely on the GPU is [name] ... by
    [device-busy time from the profiler | GPU time from CUDA events] it takes [µs] and is
    [phrase] than [peer] ([µs]), the fastest library dot ... End to end ... ours is
    [phrase]" (the fastest of ours by the fair measure; the peer the GPU row ours is
    least ahead of; the words go the way the medians go)."""
    import claims
    dot = rec("mutex.dot")
    glued = _rendered(dot)
    ours = [dot.get(n) for n in ("dot_mutex", "dot_atomic", "dot_last_block")]
    best = dot.get(glued["gpu_name"])
    assert all(claims.fair_ms(best, best) <= claims.fair_ms(r, r) for r in ours)
    peer = dot.get(glued["peer_name"])
    mine, theirs = claims.fair_ms(best, peer), claims.fair_ms(peer, best)
    assert all(theirs / mine <= claims.fair_ms(r, best) / claims.fair_ms(best, r)
               for r in _gpu_peers(dot))
    assert (glued["gpu_alike_us"], glued["peer_us"]) == (f"{1e3 * mine:.1f}",
                                                         f"{1e3 * theirs:.1f}")
    assert claims.agrees(glued["peer_vs"], mine, theirs)
    assert claims.agrees(glued["peer_e2e_vs"], best["e2e_ms"]["median"],
                         peer["e2e_ms"]["median"])


def test_mutex_contention_curves():
    """mutex.md: "`dot_atomic` stays within 15% of its best ... up to [glued] blocks; with
    [the most blocks] its atomics queue too"; "(The left end of both curves is slow for
    another reason: 32 blocks of 256 threads are too few to keep the memory busy.)";
    kernels/benchmarks/mutex.py: the mutex is fastest with about one block per SM and
    slower with every block beyond; dot_atomic stays within 15% of its best from 4 to
    8 blocks per SM (the 8 per SM the comparison launches), and the glued number of
    blocks up to which it stays there is the recording's."""
    cont = rec("mutex.contention")
    sms = cont.entry["params"]["sm_count"]
    atomic = {r["blocks"]: r for r in cont.rows(name="dot_atomic")}
    mutex = {r["blocks"]: r for r in cont.rows(name="dot_mutex")}
    best = min(atomic.values(), key=med)
    assert med(atomic[max(atomic)]) > 1.15 * med(best)
    assert compare.verdict(atomic[min(atomic)], best) == "slower"
    assert compare.verdict(mutex[min(mutex)], min(mutex.values(), key=med)) == "slower"
    assert min(mutex.values(), key=med)["blocks"] <= sms
    beyond = [med(mutex[b]) for b in sorted(mutex) if b >= sms]
    assert beyond == sorted(beyond)
    for k in (4, 8):
        assert med(atomic[k * sms]) <= 1.15 * med(best), k
    near = max(b for b in atomic if b >= best["blocks"]
               and all(med(atomic[c]) <= 1.15 * med(best) for c in atomic
                       if best["blocks"] <= c <= b))
    said = _rendered_contention(cont)["cont_atomic_near_blocks"]
    assert said == f"{near:,}", (said, near)


def test_mutex_dot_goal_of_30_us_said_as_the_recording_shows():
    """mutex.md: "The goal, set on the H100 in CUDA-event times, was 30 µs ... [The goal
    was not reached | The goal was reached | That goal was set on an H100; in [the device
    recording of date | this run on the device] ...]: the best dot product that finishes
    on the GPU stays [glued] µs above its floor" (a gap, never a negative one)."""
    dot = rec("mutex.dot")
    said = _rendered(dot)["dot_goal"]
    one_launch_us = 1e3 * min(med(dot.get(n)) for n in ("dot_last_block", "dot_atomic"))
    if "H100" in dot.env["device"]["name"]:
        assert said == ("The goal was not reached" if one_launch_us > 30
                        else "The goal was reached")
    else:
        assert "reached" not in said and dot.where in said
    floor_ms = 2 * 4 * dot.entry["params"]["n"] / dot.limits["copy_gbps"] / 1e6 + \
        dot.limits.get("kernel_ms", 0)
    assert one_launch_us / 1e3 > floor_ms


def test_mutex_at_the_most_blocks_the_hand_overs_are_the_whole_cost():
    """mutex.md: "with one block per 256 elements ([most] blocks) it takes [glued] ms ...:
    the lock hand-overs, one after another, are the whole cost" (the same dot product with
    an atomic per block, at as many blocks, takes a small fraction of that time)."""
    cont = rec("mutex.contention")
    most = max(r["blocks"] for r in cont.rows(name="dot_mutex"))
    mutex = cont.get("dot_mutex", blocks=most)
    atomic = cont.get("dot_atomic", blocks=most)
    assert med(atomic) < 0.05 * med(mutex)


def test_mutex_names_the_checkers_time_limit_on_a_gpu_and_on_the_simulator():
    """mutex.md: "each call runs under a time limit (... `kernels.checks.core.TIME_LIMIT_S`,
    20 s on a GPU and 60 s on the simulator)": the values as the source sets them (this
    process may run on the simulator, so the GPU's is read from the assignment)."""
    import inspect
    import pathlib
    import re

    from kernels.checks import core
    found = re.search(r"^TIME_LIMIT_S = ([\d.]+) if SIMULATOR else ([\d.]+)",
                      inspect.getsource(core), flags=re.M)
    assert found, "kernels.checks.core.TIME_LIMIT_S is no longer set as the sentence says"
    simulator, gpu = (float(v) for v in found.groups())
    text = " ".join((pathlib.Path(__file__).resolve().parents[1] / "book" / "mutex.md")
                    .read_text().split())
    assert (f"`kernels.checks.core.TIME_LIMIT_S`, {gpu:.0f} s on a GPU and {simulator:.0f} s "
            "on the simulator") in text
