"""One module per topic, each registering its benchmarks with ``harness.benchmark``.

Run them with ``python -m kernels bench [TOPIC]`` on a GPU.
"""
