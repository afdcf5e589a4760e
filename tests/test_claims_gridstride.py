"""Claims of gridstride.md about recorded measurements, one test per claim, run on every
recording kept and on copies perturbed inside their noise (tests/claims.py).

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite (or to glue from the recording).
"""

from claims import BENCH, med, rec, recording  # noqa: F401 (recording: autouse fixture)
from kernels import compare

BOOK = BENCH.parents[1]


def test_gridstride_one_per_element_is_as_fast_as_the_gridstride_loop():
    """gridstride.md: "for a plain vector add it is as fast as the grid-stride version
    that follows"; "memory, not arithmetic, sets its speed, and both kernels reach the
    same bandwidth"; summary: "both kernels reach most of the device's copy bandwidth"."""
    vec = rec("gridstride.vector_add")
    one = vec.get("vector_add_one_per_element")
    for name in ("vector_add_one_per_element", "vector_add_gridstride"):
        assert vec.get(name)["gbps"] > 0.75 * vec.limits["copy_gbps"]
    assert compare.verdict(vec.get("vector_add_gridstride"), one) == "as fast"
    assert "as fast as anything" not in (BOOK / "gridstride.md").read_text()


def _library_adds(vec):
    return [r for r in vec.rows(kind="peer") if "CPU" not in r["name"]]


def test_gridstride_against_the_fastest_library_add_measured_alike():
    """gridstride.md: "Against the libraries on the GPU, by [device-busy time from the
    profiler | GPU time from CUDA events]: the faster of our kernels, [name], takes [µs]
    and is [phrase] than [the fastest library add] ([µs]) ... End to end ... ours is
    [phrase]" with, where ours trails, what the peer ran. Checked from the rows
    themselves: the peer is the GPU library add ours is least ahead of, by busy times
    where both rows have them, and each word goes the way the medians go."""
    import claims
    vec = rec("gridstride.vector_add")
    glued = claims.render("gridstride", "# our faster kernel against", vec=vec)
    best = vec.get(glued["vec_best"])
    assert best["kind"] == "kernel"

    def t(r):
        return claims.fair_ms(r, best if r is not best else peer)

    adds = _library_adds(vec)
    peer = vec.get(glued["vec_peer"])
    assert peer in adds and all(t(peer) / t(best) <= claims.fair_ms(r, best) / t(best)
                                for r in adds)
    assert glued["vec_measure"].startswith(claims.measure_words(best, peer))
    assert glued["vec_best_us"] == f"{1e3 * t(best):.1f}"
    assert glued["vec_peer_us"] == f"{1e3 * t(peer):.1f}"
    assert claims.agrees(glued["vec_vs_peer"], t(best), t(peer))
    assert claims.agrees(glued["vec_e2e_vs_peer"], best["e2e_ms"]["median"],
                         peer["e2e_ms"]["median"])
    trails = "slower" in glued["vec_vs_peer"]
    assert bool(glued["vec_peer_why"]) == trails
    if trails and peer["name"] == "torch.add" and "kernels" in peer:
        # the 4-wide vectorised kernel the sentence names is the one the profiler saw
        assert any("vectorized_elementwise_kernel<4," in k for k in peer["kernels"])
        assert "vectorized_elementwise_kernel<4" in glued["vec_peer_why"]


def test_gridstride_bandwidth_levels_off_once_each_sm_is_full():
    """gridstride.md: "With one block per SM ... bandwidth is low. It rises as blocks are
    added, and levels off once each SM is full (on the [device], [threads per SM / 256]
    blocks of 256 threads = [threads per SM] threads per SM); more blocks after that
    change little" (the numbers glued from kernels.hardware for the sweep's device)."""
    from kernels import hardware
    sweep = rec("gridstride.blocks_sweep")
    full = hardware.max_threads_per_sm(sweep.env["device"]["compute_capability"]) // 256
    rows = sorted(sweep.rows(kind="kernel"), key=lambda r: r["blocks_per_sm"])
    best = min(rows, key=med)
    assert compare.ratio(best, rows[0]) > 2
    times = [med(r) for r in rows if r["blocks_per_sm"] < full]
    assert times == sorted(times, reverse=True)
    for r in rows:
        if r["blocks_per_sm"] >= full:
            assert compare.verdict(r, best) == "as fast", r["blocks_per_sm"]


def test_gridstride_2d_loop_is_slower_than_the_flat_one():
    """gridstride.md: "The 2D loop is ... slower than the same addition done on the
    flattened arrays ... For an element-wise operation on contiguous arrays, flatten and
    use the 1D loop"."""
    mat = rec("gridstride.matrix_add_2d")
    assert compare.verdict(mat.get("matrix_add_gridstride_2d"),
                           mat.get("vector_add_gridstride (flattened)")) == "slower"


def test_a_numba_launch_costs_tens_of_microseconds_of_host_time():
    """gridstride.md: "A Numba launch costs tens of µs of host time (the streams chapter
    measures it), longer than many kernels"; reduction.md: "a Numba launch costs tens of
    µs of host time"."""
    launch = rec("streams.host_costs").get("kernel launch")["host_us"]
    assert 10 <= launch < 100
    assert launch > 1e3 * med(rec("reduction.sum_int32").get("sum_last_block"))


def test_gridstride_occupancy_words_follow_the_device(recording):
    """Item 4 of issue 35: the threads that fill an SM are the device's, so a T4 (sm_75,
    1,024 threads per SM) reads 4 blocks of 256, and the recordings' Hopper GPUs 8."""
    import types

    import claims
    from kernels import hardware
    t4 = {"name": "Tesla T4", "compute_capability": [7, 5], "sm_count": 40}
    for device, blocks, threads in ((t4, "4", "1,024"),
                                    (recording.data["device"], "8", "2,048")):
        sweep = types.SimpleNamespace(env={"device": device})
        glued = claims.render("gridstride", '# what "full" means', sweep=sweep,
                              hardware=hardware)
        assert (glued["sm_full_blocks"], glued["sm_threads"]) == (blocks, threads)
        assert glued["sweep_device"] == device["name"]
