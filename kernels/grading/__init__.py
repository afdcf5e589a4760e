"""Grade submitted chapter notebooks: ``python -m kernels grade SUBMISSION... --out DIR``.

One module per job:
    submissions   find the notebooks, read them, name them, tell which chapter each is
    package       the private, solution-free copy of `kernels` every worker imports
    tamper        notice a notebook that changed the grader's code in its process
    worker        the process that runs one notebook (kernels.notebook_cells, with a time
                  limit and capped output), then calls the checkers itself
    runner        start workers in parallel, with limits, and collect what they report
    reports       grades.csv, feedback/<submission>.md, Gradescope's results.json
    autograders   the Gradescope autograder and the GitHub Classroom workflow

A notebook is untrusted code: it runs in its own process, in a private temporary
folder, with a clean environment, a time limit and capped output, and reports its
results over a pipe that only the grader's side of the process is meant to write
(messages carry a random nonce). What the checkers say, not what the notebook
printed, is the grade. The limits of this containment are in book/instructors.md.
"""
