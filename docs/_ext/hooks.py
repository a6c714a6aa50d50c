"""MkDocs hooks for kiln's API reference, so that a name added to kiln shows up without an
edit here:

- `members: __all__` under a `::: module` directive becomes the module's `__all__` (less its
  submodules), read from the module when the site is built;
- the line `<!-- kiln: unplaced names -->` becomes a directive for every public name of `kiln`
  that no `::: kiln` directive of the other API pages lists (new names, until someone puts them
  on their topic's page).
"""

from __future__ import annotations

import importlib
import pathlib
import re
import sys
from types import ModuleType

MARKER = "<!-- kiln: unplaced names -->"
ALL = re.compile(
    r"^(::: (kiln[\w.]*)\n    options:\n(?:      (?!members).*\n)*)      members: __all__\n", re.M
)


def _module(path: str):
    obj = importlib.import_module("kiln")
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _listed(docs: pathlib.Path) -> set:
    """Names listed under `::: kiln` directives of the API pages."""
    names = set()
    for page in (docs / "api").glob("*.md"):
        for block in re.findall(
            r"^::: kiln\n((?:    .*\n)+)", page.read_text(encoding="utf-8"), re.M
        ):
            names |= set(re.findall(r"^        - (\w+)$", block, re.M))
    return names


def _members(names) -> str:
    return "      members:\n" + "".join(f"        - {n}\n" for n in sorted(names, key=str.lower))


def on_config(config, **kwargs):
    root = str(pathlib.Path(config.config_file_path).resolve().parent)
    if root not in sys.path:  # kiln from this checkout
        sys.path.insert(0, root)
    return config


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    def expand(m: re.Match) -> str:
        module = _module(m.group(2))
        names = [n for n in module.__all__ if not isinstance(getattr(module, n), ModuleType)]
        return m.group(1) + _members(names)

    markdown = ALL.sub(expand, markdown)
    if MARKER in markdown:
        kiln = importlib.import_module("kiln")
        public = {n for n in dir(kiln) if not n.startswith("_")}
        public = {n for n in public if not isinstance(getattr(kiln, n), ModuleType)}
        unplaced = public - _listed(pathlib.Path(config.docs_dir))
        text = "Every public name has its topic's page."
        if unplaced:
            text = "::: kiln\n    options:\n" + _members(unplaced)
        markdown = markdown.replace(MARKER, text)
    return markdown
