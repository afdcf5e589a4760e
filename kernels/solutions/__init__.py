"""Reference solutions to the exercises, one module per topic.

The chapters show them in collapsed dropdowns; the tests prove that each passes its
checker in ``kernels.checks``. The student edition of the book leaves them out.
"""
