"""Claims of cooperative.md about recorded measurements, one test per claim, run on every
recording kept and on copies perturbed inside their noise (tests/claims.py).

Each test's docstring quotes the sentence it protects; a failing test names the
sentence to rewrite (or to glue from the recording).
"""

from claims import rec, recording  # noqa: F401 (recording: the autouse fixture)


def test_cooperative_a_numba_launch_costs_the_host_time_of_its_own():
    """cooperative.md: "Every Numba launch costs the host Python and driver work (here
    [glued] µs per sweep: the launch-per-sweep version's end-to-end time less its GPU
    time)": a cost, so positive, and of the tens of µs the streams chapter measures."""
    jac = rec("cooperative.jacobi")
    small = jac.get("jacobi_launch_per_step", n=jac.entry["params"]["sizes"][0])
    assert 3 <= small["us_per_step_e2e"] - small["us_per_step"] <= 100


def test_cooperative_a_grid_barrier_costs_more_than_a_block_barrier():
    """cooperative.md: "Each row costs ... µs with the grid barrier, against ... µs with
    the (wrong) block barrier: that difference is about what one `grid.sync()` costs"."""
    rows = rec("cooperative.rows")
    assert rows.get("rows_grid_sync")["us_per_row"] > rows.get("rows_syncthreads")["us_per_row"]
