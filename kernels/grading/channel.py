"""The one channel between the judge and the process that runs a student's code.

kernels.grading.judge (trusted: it draws the cases and decides the grade) and
kernels.grading.answers (untrusted: the only process where a student's functions run)
exchange frames over two pipes, and nothing else. A frame is a JSON header line
followed by the raw bytes of the NumPy arrays it carries. Values are plain data only:
None, booleans, numbers, strings, lists, tuples, NumPy arrays and scalars of numeric
dtypes. Nothing is ever unpickled and no code or object travels, so whatever the
answer process sends, the judge reads only numbers and words; a frame larger than
MAX_FRAME_BYTES, or not of this form, is an error, never a value.
"""

import json
import os
# Bound at import, before any code of the student's runs in the answer process: code
# that replaces json.dumps or os.write there later does not reach these names (code that
# replaces what they call, json's encoder or NumPy's functions, can still change what
# the answer process sends of itself: book/instructors.md says so).
from json import dumps as _dumps
from os import write as _write

import numpy as np

MAX_FRAME_BYTES = 256 << 20  # the largest case's arrays are 80 MB (streams on a GPU)
MAX_HEADER_BYTES = 1 << 20
KINDS = "biuf"  # bool, int, unsigned, float: the dtypes a checker's values have


class ChannelError(Exception):
    """A frame that is not plain data of this form (or too large)."""


def _plain(value, arrays):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return {"number": repr(value)} if isinstance(value, float) else value
    if isinstance(value, np.generic):
        value = np.asarray(value)
        return {"scalar": value.dtype.str, "data": _plain(value.item(), arrays)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in KINDS:
            raise ChannelError(f"an array of dtype {value.dtype}, which is not a number type")
        arrays.append(np.ascontiguousarray(value))
        return {"array": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, (list, tuple)):
        items = [_plain(v, arrays) for v in value]
        return {"tuple": items} if isinstance(value, tuple) else items
    raise ChannelError(f"a {type(value).__name__}, which is not an array, a number or a "
                       "tuple of them")


def encode(value):
    """bytes of one frame holding `value`; ChannelError if it is not plain data."""
    arrays = []
    header = _dumps({"value": _plain(value, arrays),
                         "sizes": [a.nbytes for a in arrays]}).encode() + b"\n"
    return header + b"".join(a.tobytes() for a in arrays)


def _value(tree, buffers):
    if tree is None or isinstance(tree, (bool, str, int)):
        return tree
    if isinstance(tree, list):
        return [_value(v, buffers) for v in tree]
    if not isinstance(tree, dict) or len(tree) not in (1, 2):
        raise ChannelError("a value of unknown form")
    if "number" in tree:
        return float(tree["number"])
    if "tuple" in tree:
        return tuple(_value(v, buffers) for v in _list(tree["tuple"]))
    if "scalar" in tree:
        dtype = _dtype(tree["scalar"])
        return dtype.type(_value(tree["data"], buffers))
    if "array" in tree:
        dtype, shape = _dtype(tree["array"]), _list(tree["shape"])
        if not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ChannelError("an array of impossible shape")
        data = next(buffers, None)
        if data is None or len(data) != dtype.itemsize * int(np.prod(shape, dtype=object)):
            raise ChannelError("an array whose bytes do not match its shape")
        return np.frombuffer(data, dtype).reshape(shape).copy()
    raise ChannelError("a value of unknown form")


def _list(value):
    if not isinstance(value, list):
        raise ChannelError("a value of unknown form")
    return value


def _dtype(text):
    try:
        dtype = np.dtype(str(text))
    except TypeError:
        raise ChannelError(f"an unknown dtype {text!r}") from None
    if dtype.kind not in KINDS or dtype.fields or dtype.subdtype:
        raise ChannelError(f"dtype {dtype}, which is not a number type")
    return dtype


class Reader:
    """Frames from a pipe's file descriptor, read with a deadline."""

    def __init__(self, fd):
        self.fd, self.buffer = fd, bytearray()

    def _fill(self, wanted, deadline, clock):
        import select

        while len(self.buffer) < wanted:
            left = None if deadline is None else deadline - clock()
            if left is not None and left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, max(1 << 16, min(wanted - len(self.buffer), 1 << 24)))
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def read(self, deadline=None):
        """The next frame's value; EOFError when the other side closed, TimeoutError
        past `deadline` (time.monotonic()), ChannelError for a frame not of this form."""
        import time

        clock = time.monotonic
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise ChannelError("a frame header larger than any the grader sends")
            self._fill(len(self.buffer) + 1, deadline, clock)
        end = self.buffer.index(b"\n") + 1
        try:
            header = json.loads(bytes(self.buffer[:end]))
            sizes = _list(header["sizes"])
        except (ValueError, KeyError, TypeError, RecursionError):
            raise ChannelError("a frame header that is not the grader's JSON") from None
        if not all(isinstance(s, int) and s >= 0 for s in sizes) or sum(sizes) > MAX_FRAME_BYTES:
            raise ChannelError("a frame larger than MAX_FRAME_BYTES")
        self._fill(end + sum(sizes), deadline, clock)
        data, offset = [], end
        for size in sizes:
            data.append(bytes(self.buffer[offset:offset + size]))
            offset += size
        del self.buffer[:offset]
        try:
            return _value(header.get("value"), iter(data))
        except RecursionError:
            raise ChannelError("a value nested deeper than any the grader sends") from None


def write(fd, value):
    """Send `value` as one frame on file descriptor `fd`."""
    send(fd, encode(value))


def send(fd, frame):
    """Send an encoded frame on file descriptor `fd`."""
    frame = memoryview(frame)
    while frame:
        frame = frame[_write(fd, frame):]
