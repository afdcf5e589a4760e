"""The channel between the judge and an answer process: plain data only, both ways, and
every frame that is not of its form refused (kernels.grading.channel)."""

import os
import time

import numpy as np
import pytest

from kernels.grading import channel


def round_trip(value):
    read, write = os.pipe()
    try:
        channel.write(write, value)
        return channel.Reader(read).read(time.monotonic() + 5)
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2**70, 1.5, float("inf"), "text é", [1, 2.5], (1, (2, "a")),
    np.float32(1.25), np.int64(-3), np.bool_(True),
    np.arange(7, dtype=np.int32), np.zeros((0, 3)), np.array(3.5),
    np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32),
    np.frombuffer(b"ab\xff", np.uint8)])
def test_plain_values_come_back_as_they_went(value):
    got = round_trip(value)
    assert type(got) is type(value)
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and got.shape == value.shape
        np.testing.assert_array_equal(got, value)
    else:
        assert got == value or (got != got and value != value)


def test_a_nan_comes_back():
    assert np.isnan(round_trip(float("nan"))) and np.isnan(round_trip(np.float32("nan")))


@pytest.mark.parametrize("value", [np.array([object()]), {"a": 1}, object(), {1, 2},
                                   np.zeros(2, [("a", "i4")]), b"bytes", 1j])
def test_anything_but_plain_data_is_refused_when_sent(value):
    with pytest.raises(channel.ChannelError):
        channel.encode(value)


@pytest.mark.parametrize("frame", [
    b"not json\n",
    b'{"value": 1}\n',  # no sizes
    b'{"value": {"array": "<f8", "shape": [4]}, "sizes": [8]}\n' + bytes(8),  # bytes short
    b'{"value": {"array": "|O", "shape": [1]}, "sizes": [8]}\n' + bytes(8),  # objects
    b'{"value": {"code": "print(1)"}, "sizes": []}\n',
    b'{"value": {"array": "<f8", "shape": [-1]}, "sizes": [0]}\n',
    b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b', "sizes": []}\n',
    b'{"value": 1, "sizes": [999999999999]}\n',
])
def test_a_frame_not_of_the_grader_s_form_is_refused(frame):
    read, write = os.pipe()
    try:
        os.write(write, frame) if len(frame) < 60_000 else None
        if len(frame) >= 60_000:  # larger than a pipe holds: written from a thread
            import threading
            threading.Thread(target=os.write, args=(write, frame), daemon=True).start()
        with pytest.raises(channel.ChannelError):
            channel.Reader(read).read(time.monotonic() + 5)
    finally:
        os.close(read)
        os.close(write)


def test_a_closed_pipe_and_a_silent_one_are_told_apart():
    read, write = os.pipe()
    reader = channel.Reader(read)
    with pytest.raises(TimeoutError):
        reader.read(time.monotonic() + 0.2)
    os.close(write)
    with pytest.raises(EOFError):
        reader.read(time.monotonic() + 5)
    os.close(read)
