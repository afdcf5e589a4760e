"""The registry of benchmarks and their recordings in ``book/_data/bench/<device>.json``.

Each recording is stamped with the source hash of the kernels its benchmark ran, so a
changed kernel makes its recording stale. ``live_or_recorded`` runs a benchmark on a
GPU and reads its recording otherwise.
"""

import dataclasses
import datetime
import functools
import hashlib
import importlib
import inspect
import json
import pathlib
import platform
import re

import numpy as np

from kernels import SIMULATOR, device

# In a checkout the recordings live with the book; an installed package (as on
# Colab) carries a copy of them as kernels/recordings (see pyproject.toml).
_PACKAGE = pathlib.Path(__file__).resolve().parent.parent
_CHECKOUT_BENCH_DIR = _PACKAGE.parent / "book" / "_data" / "bench"
BENCH_DIR = _CHECKOUT_BENCH_DIR if _CHECKOUT_BENCH_DIR.is_dir() else _PACKAGE / "recordings"
TOPICS = ("gridstride", "atomics", "histogram", "reduction", "mutex", "streams",
          "cooperative", "matmul")
SCHEMA = 1


@dataclasses.dataclass
class Benchmark:
    key: str          # "<topic>.<name>"
    fn: object        # () -> entry dict with "description", "params", "rows"
    covers: tuple     # the kernels and launchers it runs, for the source hash
    # False for an experiment on one version (where its output sits, a variant of it),
    # not a problem its versions race on: the performance summary leaves it out
    summarised: bool = True
    _hashed: tuple = dataclasses.field(default=(None, ""), repr=False, compare=False)

    def source_hash(self):
        """source_hash of what it covers, computed once a process for the same covers:
        their source does not change while it runs (inspect reads it through linecache's
        cache), and the claims tests ask again for every recording."""
        if self._hashed[0] is not self.covers:
            self._hashed = (self.covers, source_hash(*self.covers))
        return self._hashed[1]


BENCHMARKS = {}


def benchmark(*covers, summarised=True):
    """Register a benchmark of ``kernels.benchmarks.<topic>`` that runs `covers`
    (`summarised`: see Benchmark)."""
    def register(fn):
        topic = fn.__module__.rsplit(".", 1)[-1]
        key = f"{topic}.{fn.__name__}"
        BENCHMARKS[key] = Benchmark(key, fn, covers, summarised)
        return fn
    return register


def load_benchmarks(topic=None):
    """Import the benchmark modules (all, or one topic's) and return the registry."""
    for t in TOPICS if topic is None else (topic,):
        try:
            importlib.import_module(f"kernels.benchmarks.{t}")
        except ModuleNotFoundError as err:
            if err.name != f"kernels.benchmarks.{t}":
                raise
    return {k: b for k, b in BENCHMARKS.items() if topic is None or k.startswith(topic + ".")}


def _source(obj):
    """Source of a function or kernel, decorators included, followed by the lines
    that assign the module constants it reads (a tile size is part of the kernel).
    The assignment's text, not its value: `X = 16 if SIMULATOR else 128` hashes
    the same on the simulator as on a GPU."""
    py = getattr(obj, "py_func", None) or getattr(obj, "fn", None) or obj
    if inspect.isclass(py):
        return inspect.getsource(py)
    assigned = _assignments(inspect.getmodule(py))
    assignments = []
    for name in sorted(py.__code__.co_names):
        value = py.__globals__.get(name, _source)
        if value is _source or callable(value) or inspect.ismodule(value):
            continue
        assignments += assigned.get(name, [])
    return inspect.getsource(py) + "\n".join(assignments)


_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)\s*(:[^=]*)?=[^=]")


@functools.lru_cache(maxsize=None)
def _assignments(module):
    """{name: [lines of `module` that assign it]}: read once per module, as the claims
    tests ask for the hash of every benchmark of every recording."""
    found = {}
    for line in inspect.getsource(module).splitlines():
        m = _ASSIGNMENT.match(line)
        if m:
            found.setdefault(m.group(1), []).append(line)
    return found


def source_hash(*objs):
    """A short hash of the source of kernels and functions and the constants they read."""
    h = hashlib.sha256()
    for obj in objs:
        h.update(_source(obj).encode())
    return h.hexdigest()[:12]


def row(name, kind, timing=None, **fields):
    """One result row: a version (kind "kernel"), a "peer" or a "limit"."""
    r = {"name": name, "kind": kind}
    if timing is not None:
        r.update(timing.to_dict())
    r.update(fields)
    return r


def run_benchmark(key):
    """Run one registered benchmark now, on the GPU; return its entry."""
    from kernels.harness.timing import require_gpu

    require_gpu("a benchmark")
    bench = load_benchmarks(key.split(".")[0])[key]
    entry = bench.fn()
    entry.update(source_hash=bench.source_hash(),
                 date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    return entry


def environment():
    """Device and software versions, for a recording's header."""
    import numba_cuda
    from numba import cuda

    env = {"device": device(), "numba_cuda": numba_cuda.__version__,
           "numpy": np.__version__, "python": platform.python_version()}
    if not SIMULATOR:
        env["device"]["l2_bytes"] = cuda.get_current_device().L2_CACHE_SIZE
        env["driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
        try:
            import cupy
            env["cupy"] = cupy.__version__
        except ImportError:
            env["cupy"] = None
    return env


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def write_recording(entries, limits, path=None, env=None):
    """Merge `entries` ({key: entry}) into a device's recording file."""
    env = env or environment()
    path = pathlib.Path(path or BENCH_DIR / f"{slug(env['device']['name'])}.json")
    data = json.loads(path.read_text()) if path.exists() else {"benchmarks": {}}
    data.update(env, schema=SCHEMA, limits=limits)
    # each entry keeps the limits measured in its own run: its floor is built from them
    data["benchmarks"].update({k: {**e, "limits": e.get("limits", limits)}
                               for k, e in entries.items()})
    data["benchmarks"] = dict(sorted(data["benchmarks"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def merge_recording(src):
    """Merge a recording file made elsewhere (e.g. on a lent GPU) into BENCH_DIR.

    A file that is missing, unreadable, not JSON or not a recording raises ValueError
    saying which; nothing is written then."""
    what = "a recording (.json) that `python -m kernels bench` wrote"
    try:
        data = json.loads(pathlib.Path(src).read_text())
    except FileNotFoundError:
        raise ValueError(f"no file {src}: give {what}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read {src} ({err}): give {what}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{src} is not JSON ({err}): give {what}") from None
    missing = [k for k in ("device", "numba_cuda", "benchmarks", "limits")
               if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(f"{src} is not {what}: it has no {', '.join(missing)}")
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{src} is a recording of schema {data.get('schema')}, this "
                         f"package reads schema {SCHEMA}: record it again with this version")
    env = {k: v for k, v in data.items() if k not in ("benchmarks", "limits", "schema")}
    return write_recording(data["benchmarks"], data["limits"], env=env)


def recordings():
    """Every recording file, as {path: data}."""
    return {p: json.loads(p.read_text()) for p in sorted(BENCH_DIR.glob("*.json"))}


@dataclasses.dataclass
class Result:
    """A benchmark entry with where it came from: run live, or recorded."""

    key: str
    entry: dict
    env: dict
    limits: dict
    live: bool
    stale: bool

    def rows(self, kind=None, **params):
        """Rows of this kind whose fields equal `params`."""
        return [r for r in self.entry["rows"]
                if (kind is None or r["kind"] == kind)
                and all(r.get(k) == v for k, v in params.items())]

    def get(self, name, **params):
        found = self.rows(name=name, **params)
        if len(found) != 1:
            raise KeyError(f"{self.key}: {len(found)} rows named {name!r} with {params}")
        return found[0]

    @property
    def caption(self):
        dev = self.env["device"]["name"]
        date = self.entry["date"][:10]
        how = "measured live" if self.live else "recorded"
        text = f"{dev}, {how} {date}, numba-cuda {self.env['numba_cuda']}"
        if self.stale:
            text += " - STALE: the kernels changed since this recording"
        return text

    @property
    def where(self):
        """Where the numbers come from, for a sentence: 'this run on the Tesla T4' (live)
        or 'the NVIDIA H200 recording of 2026-11-26'; a page read live on a GPU must not
        call its own run a recording."""
        dev = self.env["device"]["name"]
        return (f"this run on the {dev}" if self.live
                else f"the {dev} recording of {self.entry['date'][:10]}")


def recorded(key):
    """The recorded entry of benchmark `key`, newest across devices, staleness checked.

    A recording whose benchmark is not in this package (the student edition cannot time
    the solutions) is returned as recorded, its staleness unknown."""
    bench = load_benchmarks(key.split(".")[0]).get(key)
    found = [(data["benchmarks"][key]["date"], data) for data in recordings().values()
             if key in data["benchmarks"]]
    if bench is None and not found:
        raise KeyError(f"no benchmark named {key!r}")
    if not found:
        raise LookupError(f"no recording of {key!r} in {BENCH_DIR}: run "
                          f"`python -m kernels bench {key.split('.')[0]}` on a GPU")
    _, data = max(found, key=lambda f: f[0])
    entry = data["benchmarks"][key]
    env = {k: v for k, v in data.items() if k not in ("benchmarks", "limits")}
    return Result(key, entry, env, entry.get("limits", data["limits"]), live=False,
                  stale=bench is not None and entry["source_hash"] != bench.source_hash())


def live_or_recorded(key):
    """Run benchmark `key` now on a GPU; on the simulator, or where this package cannot
    run it (the student edition and the top-k solution), return its recording."""
    if SIMULATOR or key not in load_benchmarks(key.split(".")[0]):
        return recorded(key)
    from kernels.harness.timing import measure_limits

    return Result(key, run_benchmark(key), environment(), measure_limits(), live=True,
                  stale=False)
