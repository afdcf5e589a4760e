"""A trace as plain data (numbers, words and integer arrays), and back, checked.

The grader traces a student's code beside it, in the answer process (on a GPU machine
in the tracer's simulator process, kernels.trace.remote), and decides in its judge,
where that code never ran (kernels.grading): the trace travels between them
over a channel that carries plain data only (kernels.grading.channel), never a
pickle. `encode` turns a Trace into such data: the accesses as columns of int64
arrays, each clock (kernels.trace.order.Clock) once, however many accesses share it.
`decode` rebuilds the Trace and refuses, with WireError, anything that is not the
form `encode` makes (a wrong type, a length that does not match, an index out of
range): what it rebuilds is then only ever numbers and words that the analyses read
in the judge (kernels.trace.hazards and analyses; kernels.checks.points, races, hints).
"""

import numpy as np

from kernels.trace.model import Access, Launch, Operation, Trace, TraceError
from kernels.trace.order import Clock

# Access columns, in order: ints, then three columns each for block and thread, then the
# words as table positions; the indices are a table of their own, as wide as the most
# dimensions an array has (padded with 0; each index's length in "ndim")
_INTS = ("seq", "tid", "address", "sector_base", "itemsize", "epoch", "grid_epoch",
         "counter", "site0", "site1", "site2", "ndim", "locks", "clock", "pending",
         "valued", "value")
_WORDS = ("space", "array", "kind", "op")
_COLUMNS = _INTS + ("block0", "block1", "block2", "thread0", "thread1", "thread2") + _WORDS
_ARRAY_KEYS = ("space", "shape", "dtype", "same_as", "allocation", "largest", "counted")


class WireError(TraceError):
    """What came back is not a trace as `encode` makes one."""


class _Table:
    """Distinct values (by identity, or by equality where `equal`), numbered."""

    def __init__(self, equal=False):
        self.items, self._number, self.equal = [], {}, equal

    def number(self, value):
        key = value if self.equal else id(value)
        if key not in self._number:
            self._number[key] = len(self.items)
            self.items.append(value)
        return self._number[key]


def encode(trace):
    """`trace` as a tuple of plain data (kernels.grading.channel carries it)."""
    words, clocks, locks = _Table(equal=True), _Table(), _Table(equal=True)
    accesses = _Table()
    launches = []
    for launch in trace.launches:
        first = len(accesses.items)
        for a in launch.accesses:
            accesses.number(a)
        events = [(seq, accesses.number(a), change) for seq, a, change in launch.lock_events]
        arrays = [(name, [(k, _array_value(info[k])) for k in _ARRAY_KEYS if k in info])
                  for name, info in launch.arrays.items()]
        launches.append((launch.number, launch.kernel, _dim3_of(launch.grid),
                         _dim3_of(launch.block), launch.stream, arrays, first,
                         len(launch.accesses), _pairs(launch.clock),
                         bool(launch.cooperative), list(launch.diverged), events))
    # one row and one padded index per access, in _COLUMNS' order: attributes read by
    # name, tables' methods bound once (a race case's trace has tens of thousands)
    word, lock, clock = words.number, locks.number, clocks.number
    width = max((len(a.index) for a in accesses.items), default=0)
    pad = (0,) * width
    rows, padded = [], []
    for a in accesses.items:
        padded.append(a.index + pad[len(a.index):])
        rows.append((a.seq, a.tid, a.address, a.sector_base, a.itemsize, a.epoch,
                     a.grid_epoch, a.counter, *a.site, len(a.index),
                     lock(tuple(sorted(a.locks)) if a.locks else ()),
                     -1 if a.clock is None else clock(a.clock),
                     -1 if a.pending is None else clock(a.pending),
                     a.value is not None, a.value or 0, *a.block, *a.thread,
                     word(a.space), word(a.array), word(a.kind), word(a.op)))
    indices = np.array(padded, np.int64).reshape(len(padded), width)
    table = np.array(rows, dtype=np.int64).reshape(len(rows), len(_COLUMNS))
    operations = [(op.seq, op.what, op.stream, _pairs(op.clock),
                   np.array(op.reads, np.int64).reshape(-1, 2),
                   np.array(op.writes, np.int64).reshape(-1, 2)) for op in trace.operations]
    return ("trace", launches, (table, indices), list(words.items), _clocks(clocks.items),
            [np.array(s, np.int64) for s in locks.items], operations,
            _pairs(trace.regions), int(trace.device_waits))


def _dim3_of(values):
    """A launch's grid or block as three Python ints (a NumPy integer is one too)."""
    return tuple(int(v) for v in values)


def _array_value(value):
    if isinstance(value, np.dtype):
        return value.str
    return tuple(int(v) for v in value) if isinstance(value, tuple) else value


def _pairs(mapping):
    return [(k, v) for k, v in mapping.items()]


def _clocks(items):
    """The clocks as arrays: grid[m] and the number of each one's threads' table; the
    blocks' entries (x, y, z, barriers), each with the clock it belongs to; the threads
    (x, y, z, tid) the clocks know of; and each distinct threads' table once, as entries
    (table, thread, counter) in int32. Where threads take locks, every clock knows of
    most threads, and many clocks know the same: a trace of a few thousand lock-taking
    threads held millions of entries, most of them repeated."""
    first, grid = [], []  # each distinct table, as the first dict of it
    of_dict, alike = {}, {}  # a dict's number; numbers by (length, sum of values)
    for c in items:
        table = c.threads
        number = of_dict.get(id(table))  # clocks share tables: each dict compared once
        if number is None:
            # equal tables, found without hashing millions of entries: the few of one
            # length and sum are compared whole
            fingerprint = (len(table), sum(table.values()))
            number = next((n for n in alike.get(fingerprint, ()) if first[n] == table),
                          len(first))
            if number == len(first):
                first.append(table)
                alike.setdefault(fingerprint, []).append(number)
            of_dict[id(table)] = number  # items holds every clock: no id is reused
        grid.append((c.grid, number))
    blocks = [(n, *b, v) for n, c in enumerate(items) for b, v in c.blocks.items()]
    threads = {}  # every thread any table knows of, numbered in order of appearance
    for table in first:
        threads.update(dict.fromkeys(table))
    position = {key: n for n, key in enumerate(threads)}.__getitem__
    # column by column, in C loops: millions of entries where threads take locks
    entries = np.zeros((sum(map(len, first)), 3), np.int64)
    start = 0
    for n, table in enumerate(first):
        end = start + len(table)
        entries[start:end, 0] = n
        entries[start:end, 1] = np.fromiter(map(position, table), np.int64, len(table))
        entries[start:end, 2] = np.fromiter(table.values(), np.int64, len(table))
        start = end
    if len(entries) and (entries.max() >= 2**31 or entries.min() < -2**31):
        raise WireError("a clock's entry past 32 bits")
    return (np.array(grid, np.int64).reshape(-1, 2), np.array(blocks, np.int64).reshape(-1, 5),
            np.array([(*b, t) for b, t in threads], np.int64).reshape(-1, 4),
            entries.astype(np.int32))


def decode(data):
    """The Trace that `encode` made `data` from; WireError if it is not of that form."""
    try:
        return _decode(data)
    except WireError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, OverflowError) as err:
        raise WireError(f"the trace that came back is malformed ({type(err).__name__})") \
            from None


def _check(condition, what):
    if not condition:
        raise WireError(f"the trace that came back is malformed ({what})")


def _ints(value, shape_tail, what):
    _check(isinstance(value, np.ndarray) and value.dtype == np.int64
           and value.ndim == 1 + len(shape_tail) and value.shape[1:] == shape_tail, what)
    return value


def _int(value, what):
    _check(type(value) is int, what)
    return value


def _word(value, what):
    _check(type(value) is str, what)
    return value


def _dim3(values, what):
    _check(isinstance(values, tuple) and len(values) == 3, what)
    return tuple(_int(v, what) for v in values)


def _decode(data):
    _check(isinstance(data, tuple) and len(data) == 9 and data[0] == "trace", "its form")
    _, launches, table, words, clocks, locks, operations, regions, waits = data
    _check(isinstance(table, tuple) and len(table) == 2, "the accesses")
    table, indices = table
    table = _ints(table, (len(_COLUMNS),), "the accesses")
    _check(isinstance(indices, np.ndarray) and indices.dtype == np.int64
           and indices.ndim == 2 and len(indices) == len(table), "the indices")
    words = [_word(w, "a word") for w in words]
    clock_list = _decode_clocks(clocks)
    lock_sets = [frozenset(int(v) for v in _ints(s, (), "a lock set")) for s in locks]
    column = {name: table[:, k] for k, name in enumerate(_COLUMNS)}
    _check(((column["locks"] >= 0) & (column["locks"] < len(lock_sets))).all(), "locks")
    for name in ("clock", "pending"):  # -1: none
        _check(((column[name] >= -1) & (column[name] < len(clock_list))).all(), name)
    _check(((column["ndim"] >= 0) & (column["ndim"] <= indices.shape[1])).all(), "ndim")
    _check(((column["valued"] == 0) | (column["valued"] == 1)).all(), "valued")
    for name in _WORDS:
        _check(((column[name] >= 0) & (column[name] < len(words))).all(), name)
    accesses = [_access(row, index, words, clock_list, lock_sets)
                for row, index in zip(table.tolist(), indices.tolist())]
    return Trace([_launch(entry, accesses) for entry in _list(launches, "launches")],
                  [_operation(entry) for entry in _list(operations, "operations")],
                  {_int(k, "a region"): _word(v, "a region") for k, v in
                   _list(regions, "regions")}, _int(waits, "device waits"))


def _list(value, what):
    _check(isinstance(value, list), what)
    return value


def _access(row, index, words, clocks, locks):
    (seq, tid, address, sector_base, itemsize, epoch, grid_epoch, counter, site0, site1,
     site2, ndim, held, clock, pending, valued, value, block0, block1, block2, thread0,
     thread1, thread2, space, array, kind, op) = row  # _COLUMNS, in its order
    return Access(
        seq, (block0, block1, block2), (thread0, thread1, thread2), tid, words[space],
        words[array], tuple(index[:ndim]), address, sector_base, itemsize, words[kind],
        words[op], epoch, locks[held], (site0, site1, site2), grid_epoch, counter,
        None if clock < 0 else clocks[clock], None if pending < 0 else clocks[pending],
        value if valued else None)


def _decode_clocks(clocks):
    _check(isinstance(clocks, tuple) and len(clocks) == 4, "the clocks")
    grid = _ints(clocks[0], (2,), "the clocks' grid")
    blocks, threads = _ints(clocks[1], (5,), "the clocks"), _ints(clocks[2], (4,), "clocks")
    entries = clocks[3]
    _check(isinstance(entries, np.ndarray) and entries.dtype == np.int32
           and entries.ndim == 2 and entries.shape[1] == 3, "the clocks' entries")
    m = len(grid)
    count = int(entries[:, 0].max()) + 1 if len(entries) else 0
    _check(((blocks[:, 0] >= 0) & (blocks[:, 0] < m)).all()
           and ((entries[:, 0] >= 0) & (entries[:, 1] >= 0)).all()
           and ((entries[:, 1] < len(threads))).all()
           and ((grid[:, 1] >= 0) & (grid[:, 1] <= count)).all(), "a clock's entry")
    keys = [((x, y, z), tid) for x, y, z, tid in threads.tolist()]
    of_block = [{} for _ in range(m)]
    for n, x, y, z, value in blocks.tolist():
        of_block[n][(x, y, z)] = value
    # each table's entries together (a stable sort: a repeated thread keeps its last
    # value), each table built in C loops: millions of entries where threads take locks
    entries = entries[np.argsort(entries[:, 0], kind="stable")]
    bounds = np.searchsorted(entries[:, 0], np.arange(count + 2)).tolist()
    thread_of, value_of, key = entries[:, 1].tolist(), entries[:, 2].tolist(), keys.__getitem__
    tables = [dict(zip(map(key, thread_of[lo:hi]), value_of[lo:hi]))
              for lo, hi in zip(bounds, bounds[1:])]
    return [Clock(g, of_block[n], tables[t])  # shared: a clock is never changed
            for n, (g, t) in enumerate(grid.tolist())]


def _launch(entry, accesses):
    _check(isinstance(entry, tuple) and len(entry) == 12, "a launch")
    (number, kernel, grid, block, stream, arrays, first, count, clock, cooperative,
     diverged, events) = entry
    first, count = _int(first, "a launch"), _int(count, "a launch")
    _check(0 <= first and 0 <= count and first + count <= len(accesses), "a launch's accesses")
    launch = Launch(_int(number, "a launch"), _word(kernel, "a kernel"),
                    _dim3(grid, "a grid"), _dim3(block, "a block"), _int(stream, "a stream"),
                    {_word(name, "an array"): _array_info(info)
                     for name, info in _list(arrays, "arrays")},
                    accesses[first:first + count], clock=_stream_clock(clock),
                    cooperative=cooperative is True,
                    diverged=[_word(d, "a barrier") for d in _list(diverged, "barriers")])
    for event in _list(events, "lock events"):
        _check(isinstance(event, tuple) and len(event) == 3, "a lock event")
        seq, at, change = event
        _check(type(at) is int and 0 <= at < len(accesses) and change in ("take", "release"),
               "a lock event")
        launch.lock_events.append((_int(seq, "a lock event"), accesses[at], change))
    return launch


def _array_info(info):
    found = {}
    for key, value in _list(info, "an array"):
        _check(key in _ARRAY_KEYS and key not in found, "an array's entry")
        if key == "shape":
            _check(isinstance(value, tuple) and all(type(v) is int for v in value), "a shape")
        elif key == "dtype":
            value = np.dtype(_word(value, "a dtype"))
        elif key in ("space", "same_as"):
            _check(value is None or type(value) is str, "an array's entry")
        else:
            _check(value is None or type(value) is int, "an array's entry")
        found[key] = value
    return found


def _stream_clock(pairs):
    return {_int(k, "a clock"): _int(v, "a clock") for k, v in _list(pairs, "a clock")}


def _operation(entry):
    _check(isinstance(entry, tuple) and len(entry) == 6, "an operation")
    seq, what, stream, clock, reads, writes = entry
    return Operation(_int(seq, "an operation"), _word(what, "an operation"),
                     _int(stream, "an operation"), _stream_clock(clock),
                     [tuple(r) for r in _ints(reads, (2,), "reads").tolist()],
                     [tuple(w) for w in _ints(writes, (2,), "writes").tolist()])
