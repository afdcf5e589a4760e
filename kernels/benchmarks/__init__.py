"""One module per topic, each registering its benchmarks with ``harness.benchmark``.

Run them with ``python -m kernels bench [TOPIC]`` on a GPU. Peers come from CuPy and
PyTorch where they are installed (both are on Colab and on the lent GPU machine): a
missing library drops its rows, never the benchmark.
"""

import importlib


def optional(name):
    """The module `name` (cupy, torch), or None where it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
