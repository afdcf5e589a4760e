"""Sphinx extension: write each page's scripts once.

Sphinx 7.4 keeps an inline script that an extension adds after the builder started
twice (once with filename None, once with ''). sphinx-thebe adds its settings that
way, so every page ran `const THEBE_JS_URL = ...` twice and the browser console
showed "SyntaxError: Identifier 'THEBE_JS_URL' has already been declared"
(tests/test_site.py checks that no page logs an error).
"""


def _dedupe(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
