"""The book's claims about its own recorded measurements, one test per claim.

A sentence that compares or quantifies recorded numbers is either glued from the
recording with its word chosen by ``kernels.compare`` (it then cannot disagree with
the numbers), or states its word in the prose and is protected here: each test's
docstring names the chapter and quotes the sentence, and reads the recording the
book shows (``harness.recorded``, newest across devices). A re-recording that flips
a claim fails its test, so the prose is rewritten before a reader sees it.
"""

import pytest

from kernels import compare, harness


def rec(key):
    return harness.recorded(key)


def med(row):
    return compare.ms(row)


# ----------------------------------------------------------------- reduction.md


def test_reduction_pcie_is_dozens_of_times_slower_than_hbm():
    """reduction.md: "it must first cross PCIe at some tens of GB/s, dozens of times
    slower, and the copy, not the kernel, sets the time"."""
    limits = rec("reduction.travel").limits
    assert 10 <= limits["h2d_gbps"] < 100
    assert limits["copy_gbps"] / limits["h2d_gbps"] >= 20


def test_reduction_on_device_call_is_mostly_not_the_kernel():
    """reduction.md: "On the device, the answer is back in ... ms, and most of that is
    not the ... µs kernel but Python"."""
    travel, sums = rec("reduction.travel"), rec("reduction.sum_int32")
    on_device = med(travel.rows(where="on the device already")[0])
    assert med(sums.get("sum_unrolled")) < on_device / 2


def test_reduction_pageable_call_is_almost_all_copy():
    """reduction.md summary: "data that must first cross PCIe spends almost the whole
    call in the copy (...% from pageable memory)"."""
    travel = rec("reduction.travel")
    pageable = med(travel.rows(where="copied from pageable memory")[0])
    on_device = med(travel.rows(where="on the device already")[0])
    assert (pageable - on_device) / pageable >= 0.9


def test_reduction_managed_memory_is_slower_than_a_pinned_copy():
    """reduction.md: "Managed memory is convenient, not fast": the trip takes several
    times as long as a pinned copy of the same bytes."""
    travel = rec("reduction.travel")
    managed = med(travel.rows(where="managed")[0])
    on_device = med(travel.rows(where="on the device already")[0])
    h2d_ms = travel.entry["params"]["bytes"] / travel.limits["h2d_gbps"] / 1e6
    assert managed - on_device > 2 * h2d_ms
