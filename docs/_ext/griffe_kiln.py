"""A Griffe extension for kiln's API pages (mkdocstrings): docstring examples (`>>>` doctest
blocks, which pytest runs) become `pycon` code blocks instead of Markdown block quotes."""

from __future__ import annotations

import griffe


def fence_doctests(text: str) -> str:
    """Wraps each run of doctest lines (a `>>>` line up to the next blank line) in a fence.

    >>> print(fence_doctests("Adds.\\n\\n>>> 1 + 1\\n2"))
    Adds.
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    """
    out, block, indent = [], [], ""
    for line in [*text.splitlines(), ""]:
        if block and line.strip():
            block.append(line)
            continue
        if block:
            out += [f"{indent}```pycon", *block, f"{indent}```"]
            block = []
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = [line]
        else:
            out.append(line)
    return "\n".join(out).rstrip("\n")


class KilnDocs(griffe.Extension):
    def on_object(self, *, obj, loader, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
