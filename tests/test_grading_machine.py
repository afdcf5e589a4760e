"""The cores the grader counts: affinity, less a container's CPU quota."""

import os
import subprocess
import sys
import uuid

import pytest

from kernels.grading import machine

AFFINITY = len(os.sched_getaffinity(0))


def tree(tmp_path, proc, files):
    """A fake /proc/self/cgroup holding `proc` and a cgroup mount with `files`
    ({relative path: text})."""
    for name, text in files.items():
        path = tmp_path / "cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "proc").write_text(proc)
    return str(tmp_path / "proc"), str(tmp_path / "cgroup")


@pytest.mark.parametrize("proc, files, quota", [
    ("0::/\n", {"cpu.max": "50000 100000\n"}, 0.5),  # a container's own v2 cgroup
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),
    ("0::/user.slice/grader\n", {"user.slice/grader/cpu.max": "max 100000\n",
                                 "user.slice/cpu.max": "150000 100000\n"}, 1.5),  # above it
    # v1, the container's cgroup at the mount's root while /proc names the host's path
    ("4:cpu,cpuacct:/docker/0a1b\n2:memory:/docker/0a1b\n",
     {"cpu,cpuacct/cpu.cfs_quota_us": "200000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
     2.0),
    ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ("1:cpu:/\n", {}, None),  # nothing readable: no quota
    ("1:memory:/\n", {"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"},
     None),  # the cpu controller is not this process's
    # the least of the quotas on the way up, whichever is deeper
    ("0::/a/b\n", {"a/b/cpu.max": "300000 100000\n", "a/cpu.max": "250000 100000\n"}, 2.5),
    ("0::/a/b\n", {"a/b/cpu.max": "100000 100000\n", "a/cpu.max": "400000 100000\n"}, 1.0),
    # hybrid: v1 controllers, cpuset and named ones among them, beside an empty v2 one
    ("9:name=systemd:/x\n3:cpuset:/x\n2:cpu,cpuacct:/x\n0::/x\nnot a cgroup line\n",
     {"cpuset/x/cpu.cfs_quota_us": "10000\n", "cpuset/x/cpu.cfs_period_us": "100000\n",
      "cpu,cpuacct/x/cpu.cfs_quota_us": "150000\n",
      "cpu,cpuacct/x/cpu.cfs_period_us": "100000\n"}, 1.5),
])
def test_a_quota_is_read_from_cgroup_v1_or_v2(tmp_path, proc, files, quota):
    proc_path, root = tree(tmp_path, proc, files)
    assert machine.cpu_quota(proc_path, root) == quota
    assert machine.cores(proc_path, root) == (
        AFFINITY if quota is None else max(1, min(AFFINITY, int(quota))))


def test_without_a_cgroup_file_the_affinity_counts(tmp_path):
    assert machine.cores(str(tmp_path / "none"), str(tmp_path)) == AFFINITY


def _cgroup_v1_cpu():
    folder = "/sys/fs/cgroup/cpu"
    return folder if os.access(folder, os.W_OK) and os.path.exists(
        os.path.join(folder, "cpu.cfs_quota_us")) else None


@pytest.mark.skipif(_cgroup_v1_cpu() is None, reason="needs a writable cgroup v1 cpu hierarchy")
def test_under_half_a_cpu_the_grader_counts_one_core_and_goes_one_after_the_other():
    """As Gradescope's default gives an autograder: the affinity still names every core."""
    group = os.path.join(_cgroup_v1_cpu(), f"kernels-test-{uuid.uuid4().hex[:8]}")
    os.mkdir(group)
    try:
        with open(os.path.join(group, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
            f.write("50000")
        code = ("import os, sys; open(sys.argv[1], 'w').write(str(os.getpid()));"
                "from kernels.grading import machine, runner;"
                "print(machine.cores(), runner.alongside(1, object()))")
        said = subprocess.run([sys.executable, "-c", code, os.path.join(group, "tasks")],
                              capture_output=True, text=True, check=True).stdout.split()
        assert said == ["1", "False"]
    finally:
        os.rmdir(group)
