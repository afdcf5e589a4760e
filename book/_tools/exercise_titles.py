"""Sphinx extension: exercise headings read "Exercise 2 · Title (easy)", numbered in
their chapter, and show the label.

sphinx-exercise titles an exercise "Exercise 4 (Title (easy))", and its solution
"Solution to Exercise 4 (Title (easy))": the course's titles end in their difficulty,
so the parentheses nest. Sphinx numbers them across the whole book (figure numbering,
with no numbered toctree); they are renumbered from 1 in each chapter, as the Colab
notebooks number them (book/_tools/myst_to_notebook.py) and as the chapters' prose
refers to them. The grader, its reports and the instructors name exercises by label
(`atomics-ex-256`), so the heading shows the label too.
"""

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise import nodes as exercise_nodes
from sphinx_exercise import post_transforms

SEPARATOR = " \u00b7 "


def _unwrap(parent):
    """Turn the " (" ... ")" that sphinx-exercise puts around a title into " · " ...:
    an exercise's heading holds [" (", title..., ")"], the link in its solution's
    heading [" Exercise 4", " (", title..., ")"]."""
    texts = [c for c in parent.children if isinstance(c, nodes.Text)]
    opening = next((t for t in texts if str(t) == " ("), None)
    if opening is None or parent.children[-1] is not texts[-1] or str(texts[-1]) != ")":
        return
    parent.remove(texts[-1])
    parent.replace(opening, nodes.Text(SEPARATOR))


class ExerciseTitles(SphinxPostTransform):
    # after sphinx-exercise has built the titles of exercises and of solutions
    default_priority = post_transforms.ResolveLinkTextToSolutions.default_priority + 1

    def run(self, **kwargs):
        for node in self.document.findall(exercise_nodes.exercise_enumerable_node):
            title = node.children[0]
            if not isinstance(title, nodes.title):
                continue
            _unwrap(title)
            if node.get("label"):
                title += nodes.Text(" ")
                title += nodes.inline("", "", nodes.literal(text=node["label"]),
                                      classes=["exercise-label"])
        for node in self.document.findall(exercise_nodes.solution_node):
            for link in node.children[0].findall(nodes.reference):
                _unwrap(link)


def number_per_chapter(app, env):
    """Number each chapter's exercises 1, 2, ... in their order: Sphinx has just numbered
    them across the book (env.toc_fignumbers, read by the headings, the solutions'
    titles and references alike). Sphinx itself rewrites the pages whose numbers
    changed since the last build."""
    for numbers in env.toc_fignumbers.values():
        exercises = numbers.get("exercise")
        if exercises:
            ordered = sorted(exercises, key=exercises.get)
            exercises.update({ids: (n,) for n, ids in enumerate(ordered, 1)})
    return []


def setup(app):
    app.add_post_transform(ExerciseTitles)
    # after Sphinx's own numbering, which is connected with the default priority (500)
    app.connect("env-get-updated", number_per_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
