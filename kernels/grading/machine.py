"""How many cores the grader may keep busy: the default --jobs, and whether a notebook's
run for notes goes beside its checking (kernels.grading.runner.alongside).

A container's CPU quota (Docker's --cpus) leaves the affinity naming every core of the
host: counted by affinity alone, the grader would grade a notebook per core of the host,
and run two simulator processes at once for each where there is time for fewer. A quota
set above the container's own cgroup, where the container cannot see it, is not found.
"""

import math
import os


def cores(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """The cores this process may run on (os.sched_getaffinity), or fewer where its
    cgroup's CPU quota allows less: the whole CPUs of the quota (1.5 CPUs keep one
    simulator process busy, not two), at least one."""
    count = len(os.sched_getaffinity(0))
    quota = cpu_quota(proc_cgroup, root)
    return count if quota is None else max(1, min(count, math.floor(quota)))


def cpu_quota(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """The CPUs' worth of time per period that this process's cgroup, or one above it,
    allows (the least of them), or None where none is set or none can be read: cgroup
    v2's cpu.max ("50000 100000"; "max 100000" for none), v1's cpu.cfs_quota_us (-1 for
    none) over cpu.cfs_period_us. Inside a container the cgroup's own folder is the
    mount's root, whatever path /proc names: each folder from that path up is tried."""
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":  # v2
            mounts = [root]
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's own hierarchy
            mounts = [os.path.join(root, controllers), os.path.join(root, "cpu")]
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for mount in mounts:
            for depth in range(len(parts), -1, -1):
                folder = os.path.join(mount, *parts[:depth])
                if (quota := _quota(folder)) is not None:
                    found.append(quota)
    return min(found, default=None)


def _quota(folder):
    """The quota set in cgroup folder `folder`, in CPUs; None if none is set there."""
    try:
        if os.path.exists(os.path.join(folder, "cpu.max")):
            with open(os.path.join(folder, "cpu.max")) as f:
                limit, period = f.read().split()
            return None if limit == "max" else int(limit) / int(period)
        with open(os.path.join(folder, "cpu.cfs_quota_us")) as f:
            limit = int(f.read())
        with open(os.path.join(folder, "cpu.cfs_period_us")) as f:
            period = int(f.read())
        return None if limit < 0 else limit / period
    except (OSError, ValueError):
        return None
