"""Split MyST Markdown into plain text and fenced blocks (directives and code).

Just enough of MyST for the course's tools: fences of backticks, tildes or colons
(colon fences are on in Jupyter Book), a directive's name, argument, options
(``:key: value`` lines or a ``---`` YAML block) and body. Bodies are split again by
the caller, so directives nest the way MyST nests them: an outer fence is longer
than the fences inside it.
"""

import dataclasses
import re

import yaml

FENCE_OPEN = re.compile(r"^(?P<indent> {0,3}|\s*)(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
DIRECTIVE_INFO = re.compile(r"^\{(?P<name>[A-Za-z][\w:.+-]*)\}\s*(?P<arg>.*)$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")


@dataclasses.dataclass
class Fence:
    """One fenced block: a directive when `name` is set, else a plain code block."""

    indent: str
    fence: str
    name: str | None
    arg: str
    info: str  # the text after the fence, for plain code blocks (the language)
    body: list  # lines between the fences, with `indent` removed
    line: int  # 1-based line of the opening fence
    raw: str  # the block as written, fences included

    def options_and_content(self):
        """(options dict, content text) of a directive body."""
        lines, options = list(self.body), {}
        if lines and lines[0].strip() == "---":
            end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
            if end is None:
                raise ValueError(f"line {self.line}: unclosed '---' options block")
            options = {k: "" if v is None else str(v)
                       for k, v in (yaml.safe_load("\n".join(lines[1:end])) or {}).items()}
            lines = lines[end + 1:]
        else:
            while lines and (m := OPTION.match(lines[0].strip())):
                options[m["key"]] = m["value"].strip()
                lines.pop(0)
        return options, "\n".join(lines).strip("\n")


def split(text):
    """The blocks of `text` in order: str for plain text, Fence for fenced blocks."""
    lines = text.split("\n")
    blocks, plain, i = [], [], 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        # a backtick fence's info string may not contain backticks (CommonMark)
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            plain.append(lines[i])
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                for line in lines[i + 1:j]]
        info = m["info"].strip()
        d = DIRECTIVE_INFO.match(info)
        if plain:
            blocks.append("\n".join(plain))
            plain = []
        blocks.append(Fence(indent, fence, d["name"] if d else None, d["arg"].strip() if d else "",
                            info, body, i + 1, "\n".join(lines[i:j + 1])))
        i = j + 1
    if plain:
        blocks.append("\n".join(plain))
    return blocks


def render(fence, body_text):
    """The source text of `fence` with a new body (used to rewrite a block in place)."""
    head = f"{fence.indent}{fence.fence}{fence.info}"
    body = "\n".join(fence.indent + line if line else line for line in body_text.split("\n"))
    return f"{head}\n{body}\n{fence.indent}{fence.fence}"
