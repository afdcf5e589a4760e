"""Grade submitted chapter notebooks: ``python -m kernels grade SUBMISSION... --out DIR``.

The grader's trust seam is in its layout. What runs the student's code, in the OS sandbox:
    worker       the whole notebook, top to bottom, for the notes in the feedback only
    answers      one exercise's functions, loaded alone (extract), answering the judge
                 (the kernel exercises', whose definitions run no code, share one),
                 in a process forked for it from one that imported Numba and the
                 package and runs no code of the student's;
                 it runs the checkers' answer steps (kernels.checks.steps) and records
                 the race case's trace, from a copy of the package without the rest of
                 the checkers (package.answer_side)
What decides the grade, where no code of the notebook was ever loaded:
    judge        draws the cases from a secret of this grading run, calls each checker
                 on a stand-in that sends the inputs to an answer process, compares,
                 finds the races in the traces that come back, and has the kernels
                 compiled for a GPU where no code of the student's ran (compiled, copies)
And the one narrow channel between them:
    stand_in     the judge's end: each answer step as a request, each reply as its result
    channel      frames of plain data (arrays, numbers, words); nothing is unpickled

The rest:
    submissions  find the notebooks, read them, name them, tell which chapter each is
    package      the private, solution-free copies of `kernels` the sandboxed processes import
    extract      the statements of a notebook that an exercise's names need
    reach        what those statements reach beyond the exercise (the grader's modules,
                 introspection, the simulator's flag), read from the code, never run
    confine      what a sandboxed process does first (user, limits, scratch folder)
    targets      what Numba targets there: a GPU's compile without a GPU, and jit's options
    sandbox      the bubblewrap command line
    runner       start the worker and the judge for each submission, collect what they say
    compiled     the judge's side of compiling the kernels a host function launched
    copies       a kernel described as data in the answer process, made again elsewhere
    reports      grades.csv, feedback/<submission>.md, Gradescope's results.json
    autograders  the Gradescope autograder and the GitHub Classroom workflow
    cli          the command line

What the grader protects against and what it cannot is in book/instructors.md.
"""
