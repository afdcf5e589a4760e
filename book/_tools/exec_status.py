"""Sphinx extension: the execution table (`nb-exec-table`) says "ran" or "failed" in words.

myst-nb marks each notebook's status with the emoji ✅ or ❌, which shows as an empty
box where no emoji font is installed (the CI image has none). This runs myst-nb's own
table builder and replaces the status cells, so the table is otherwise myst-nb's.
"""

from docutils import nodes
from myst_nb.ext import execution_tables
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.transforms.post_transforms import SphinxPostTransform

WORDS = {"\u2705": "ran", "\u274c": "failed"}


class ExecutionTableInWords(SphinxPostTransform):
    # before myst-nb's own replacement (8), which would draw the emoji
    default_priority = execution_tables.ExecutionStatsPostTransform.default_priority - 1

    def run(self, **kwargs):
        for node in list(self.document.findall(execution_tables.ExecutionStatsNode)):
            table = execution_tables.make_stat_table(
                self.env.docname, NbMetadataCollector.get_doc_data(self.env))
            for row in table.findall(nodes.row):
                status = row.children[-1]
                for text in list(status.findall(nodes.Text)):
                    if str(text) in WORDS:
                        text.parent.replace(text, nodes.Text(WORDS[str(text)]))
            node.replace_self(table)


def setup(app):
    app.add_post_transform(ExecutionTableInWords)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
