"""Sphinx extension: math written as MathML when the book is built.

Sphinx's default renderer leaves the LaTeX in the page for MathJax, loaded from a
CDN by the reader's browser, so the book read offline (a saved copy, a lab without a
network) showed raw LaTeX. latex2mathml turns each formula into MathML at build time,
which browsers lay out themselves (Chromium, Firefox, Safari): no script, no network.
Chosen in _config.yml (``html_math_renderer: mathml``).

A command latex2mathml does not know comes out as its own name (``<mi>\\foo</mi>``);
the build fails on it instead of showing the reader a backslash.
"""

import re

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

# a token that is still LaTeX: an unknown command, or an alignment '&' outside an environment
UNCONVERTED = re.compile(r"<(mi|mo|mtext)>(\\[A-Za-z]+|&amp;|&)</\1>")


def _mathml(translator, latex, display):
    mathml = convert(latex, display=display)
    left = UNCONVERTED.search(mathml)
    if left:
        raise ExtensionError(f"{translator.builder.current_docname}: math {latex!r}: "
                             f"latex2mathml does not convert {left.group(2)!r} (rewrite it "
                             "with commands it knows)")
    return mathml


def visit_math(self, node):
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_mathml(self, node.astext(), "inline") + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node):
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    # formulas separated by a blank line are shown one under the other, as Sphinx does
    for part in (p for p in node.astext().split("\n\n") if p.strip()):
        self.body.append(_mathml(self, part, "block"))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
