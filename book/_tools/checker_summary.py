"""Sphinx extension: on the built pages, an exercise checker's report is one line.

The chapters end with starter cells that call a checker on the reader's still-empty
answer. Run by the reader, the checker prints its full report (every case, the
first failures explained); on the page, before anyone has answered, that is screens
of FAIL. The book build sets KERNELS_CHECK_SUMMARY=1 for the notebooks it executes,
and kernels.checks.core.Report then prints its verdict in one line.
"""

import os


def setup(app):
    os.environ["KERNELS_CHECK_SUMMARY"] = "1"  # inherited by the notebooks' kernels
    return {"parallel_read_safe": True, "parallel_write_safe": True}
