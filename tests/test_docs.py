"""The documentation is true: the site builds strictly and its API reference has every public
name; every Python block of docs/**/*.md and README.md runs and prints the output shown after
it (a ```text block; `...` marks a variable part), except a block after a line
`<!-- not run: REASON -->` (code for `mpiexec`, say), which is shown only; docs/errors.md's
table matches the exception classes kiln defines.

When kiln's output changes on purpose (a new pass, another plan), refresh the pages' output
blocks with `python tests/test_docs.py PAGE.md ...` and read the diff.
"""

import contextlib
import importlib
import importlib.util
import io
import pathlib
import re
import subprocess
import sys
from types import ModuleType

import pytest

import kiln as kn
import kiln.checkpoint
import kiln.distributed
import kiln.passes
import kiln.runtime

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# the namespaces the API reference covers: every public name of each has an entry
NAMESPACES = [
    "kiln", "kiln.autograd", "kiln.checkpoint", "kiln.cuda", "kiln.errors", "kiln.init",
    "kiln.linalg", "kiln.nn", "kiln.nn.functional", "kiln.nn.init", "kiln.nn.utils",
    "kiln.optim", "kiln.optim.lr_scheduler", "kiln.optim.swa_utils", "kiln.passes",
    "kiln.plot", "kiln.random", "kiln.testing", "kiln.utils.data", "kiln.distributed",
    "kiln.nn.parallel", "kiln.masked", "kiln.signal.windows",
]  # fmt: skip


# -- the site --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built as CI builds it: `mkdocs build --strict` (the `docs` extra)."""
    for package in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(package.partition(".")[0]) is None or (
            importlib.util.find_spec(package) is None
        ):
            pytest.skip(f"{package} is not installed (pip install 'kiln[docs]')")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert result.returncode == 0, "\n".join(warnings) or result.stderr[-3000:]
    return out


def _public_names(namespace: str) -> dict:
    """{name: object} of what `namespace` offers: its `__all__`, or else what it defines (the
    package `kiln` re-exports: everything public that is not a module)."""
    module = _resolve_id(namespace)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        if namespace != "kiln":
            names = [
                n for n in names if getattr(getattr(module, n), "__module__", "") == module.__name__
            ]
    objects = {n: getattr(module, n) for n in names}
    return {n: o for n, o in objects.items() if not isinstance(o, ModuleType)}


def _resolve_id(anchor: str):
    """`kiln.nn.Linear` -> the object, by attributes from `kiln` as users reach it
    (`kiln.autograd` is an attribute, not a module path), else by importing the longest module
    path (`kiln.passes.schedule.schedule`: a function shadows its module); None if neither."""
    obj = kn
    for part in anchor.split(".")[1:]:
        obj = getattr(obj, part, None)
    if obj is not None:
        return obj
    parts = anchor.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def test_site_has_every_page_in_its_navigation(site):
    # mkdocs.yml's validation makes a page missing from the nav a warning, and --strict an error
    pages = sorted(p.relative_to(DOCS) for p in DOCS.rglob("*.md") if "_ext" not in p.parts)
    for page in pages:
        built = site / page.with_suffix("") / "index.html" if page.stem != "index" else None
        built = built or site / page.parent / "index.html"
        assert built.exists(), page


def test_api_reference_covers_every_public_name(site):
    anchors = set()
    for page in (site / "api").rglob("index.html"):
        anchors |= set(re.findall(r'id="(kiln\.[\w.]+)"', page.read_text(encoding="utf-8")))
    documented = {id(_resolve_id(a)) for a in anchors}
    missing = []
    for namespace in NAMESPACES:
        for name, obj in _public_names(namespace).items():
            if f"{namespace}.{name}" not in anchors and id(obj) not in documented:
                missing.append(f"{namespace}.{name}")
    assert not missing, f"not in the API reference (docs/api/*.md): {missing}"


def test_griffe_extension_fences_doctest_examples():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        fence = importlib.import_module("griffe_kiln").fence_doctests
    except ImportError:
        pytest.skip("griffe is not installed (pip install 'kiln[docs]')")
    finally:
        sys.path.pop(0)
    text = "Adds.\n\n>>> 1 + 1\n2\n\nArgs:\n    x: a number.\n\n    >>> f(x)\n    3"
    assert fence(text) == (
        "Adds.\n\n```pycon\n>>> 1 + 1\n2\n```\n\nArgs:\n    x: a number.\n\n"
        "    ```pycon\n    >>> f(x)\n    3\n    ```"
    )


# -- docs/errors.md --------------------------------------------------------------------------------


def _resolve(dotted: str):
    """`kn.ShapeError` or `kiln.passes.PlanError` -> the object that name reaches."""
    module, _, attr = dotted.replace("kn.", "kiln.", 1).rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _error_table() -> dict:
    """{class named in the first column: (its name as written, the names in 'also a')}."""
    rows = {}
    for line in (DOCS / "errors.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`k"):
            name = cells[0].strip("`")
            rows[_resolve(name)] = (name, set(re.findall(r"`([\w.]+)`", cells[1])))
    return rows


def _kiln_subclasses(cls) -> set:
    found = set()
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("kiln."):
            found.add(sub)
        found |= _kiln_subclasses(sub)
    return found


def test_errors_table_lists_every_kiln_error_with_its_bases():
    table = _error_table()
    defined = _kiln_subclasses(kn.KilnError)  # every module that defines one is imported above
    assert set(table) == defined, {c.__name__ for c in set(table) ^ defined}
    for cls, (name, also) in table.items():
        bases = [  # exception classes only: not a mixin such as errors._CalledAt
            b
            for b in cls.__mro__[1:]
            if issubclass(b, BaseException) and b not in (kn.KilnError, Exception, BaseException)
        ]
        kiln_bases = {b for b in bases if b.__module__.startswith("kiln.")}
        builtins = [b for b in bases if b not in kiln_bases]
        # the most specific built-ins only: FloatingPointError, not also ArithmeticError
        expected = {
            b.__name__
            for b in builtins
            if not any(o is not b and issubclass(o, b) for o in builtins)
        }
        expected |= {b.__name__ for b in kiln_bases}
        assert {a.rpartition(".")[2] for a in also} == expected, name
        for a in also:  # a kiln class in 'also a' is written as a name that reaches it
            if "." in a:
                assert _resolve(a) in cls.__mro__, (name, a)


def test_eager_autograd_errors_are_kiln_errors_and_runtime_errors():
    # errors.md's promise: `except RuntimeError` written for PyTorch keeps catching them
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as e:
        assert isinstance(e, kn.SavedTensorError) and isinstance(e, kn.KilnError)
        assert "(op mul, created at test_docs.py:" in str(e) and str(e).endswith("f32[2] on cpu")
    else:
        raise AssertionError("a second backward without retain_graph must raise")
    try:
        x.add_(1.0)
    except RuntimeError as e:
        assert isinstance(e, kn.AutogradError), type(e)
        assert str(e).startswith("a leaf Variable that requires grad is being used in an in-place")
    else:
        raise AssertionError("an in-place change of a leaf that requires grad must raise")


# -- every code block runs, and prints what the page shows -----------------------------------------

OPTIONAL = {"onnx", "onnxruntime", "matplotlib", "cupy", "networkx"}  # extras a page may need
PAGES = sorted([ROOT / "README.md", *(p for p in DOCS.rglob("*.md") if "_ext" not in p.parts)])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


NOT_RUN = re.compile(
    r"<!-- not run: (?!-->)\S[^\n]*-->\s*\Z"
)  # `<!-- not run: why -->` before a block


def not_run(text: str, fence: re.Match) -> bool:
    """Whether the ```python block `fence` is shown only: right after a line
    `<!-- not run: REASON -->` (code that needs `mpiexec` or a GPU cluster, say)."""
    return NOT_RUN.search(text, 0, fence.start()) is not None


def code_blocks(text: str) -> list:
    """[(python source, expected output or None, line)]: a ```text block right after a
    ```python block (nothing but blank lines between) is what that block prints; a block
    marked `<!-- not run: REASON -->` is left out, and so is its output."""
    blocks, previous_end = [], None
    for m in FENCE.finditer(text):
        language, body = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if language == "python" and not_run(text, m):
            previous_end = None  # the output after it is not checked
            continue
        elif language == "python":
            blocks.append([body, None, line])
        elif language == "text" and blocks and blocks[-1][1] is None:
            if previous_end is not None and not text[previous_end : m.start()].strip():
                blocks[-1][1] = body
        previous_end = m.end()
    return [tuple(b) for b in blocks]


def matches(expected: str, printed: str) -> bool:
    """Whether `printed` is `expected`, where `...` in `expected` stands for any text (a timing,
    an address, a path); trailing spaces and blank lines at the ends are ignored."""

    def tidy(s: str) -> str:
        return "\n".join(line.rstrip() for line in s.strip("\n").splitlines())

    parts = [re.escape(p) for p in tidy(expected).split("...")]
    return re.fullmatch(".*?".join(parts), tidy(printed), re.S) is not None


def test_matches_marks_variable_parts_with_an_ellipsis():
    assert matches("took ... ms\ndone\n", "took 3.2 ms  \ndone")
    assert not matches("took ... ms\ndone", "took 3.2 s\ndone")
    assert not matches("a", "a\nb")


def test_code_blocks_pairs_a_block_with_the_output_after_it():
    text = (
        "```python\nprint(1)\n```\n\n```text\n1\n```\n```python\nx = 2\n```\nok\n```text\nno\n```"
    )
    assert code_blocks(text) == [("print(1)\n", "1\n", 1), ("x = 2\n", None, 8)]
    shown = "<!-- not run: needs mpiexec -->\n```python\nrun()\n```\n```text\n0\n```\n"
    assert code_blocks(text + "\n" + shown) == code_blocks(text)
    assert code_blocks("<!-- not run: -->\n```python\nx\n```\n") == [("x\n", None, 2)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_code_runs_and_prints_what_the_page_shows(page, tmp_path, monkeypatch):
    blocks = code_blocks(page.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip("no Python code on this page")
    monkeypatch.chdir(tmp_path)  # files a page writes land here
    namespace: dict = {"__name__": "__docs__"}
    for source, expected, line in blocks:  # later blocks use names from earlier ones, as a reader
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile("\n" * (line) + source, str(page), "exec"), namespace)
        except ModuleNotFoundError as e:  # a page about an optional extra, without it
            if e.name not in OPTIONAL:
                raise
            pytest.skip(f"{page.name}:{line} needs {e.name}, an optional extra")
        if expected is not None:
            printed = out.getvalue()
            assert matches(expected, printed), (
                f"{page.name}:{line}: the block printed\n{printed}\nthe page shows\n{expected}"
            )


# -- the README's test command -------------------------------------------------------------------


def _readme_test_command() -> str:
    bash = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    commands = [line.strip() for b in bash for line in b.splitlines() if "pytest" in line]
    assert len(commands) == 1, commands
    return commands[0]


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert [line.strip() for line in ci if "pytest" in line and not line.startswith("#")] == [
        _readme_test_command()
    ]


def test_readme_test_command_ends_with_pytest_summary_line():
    # the README's flags with the project's pytest configuration, on one fast test
    command = _readme_test_command().split()
    assert command[:3] == ["python", "-m", "pytest"]
    test = "tests/test_docs.py::test_matches_marks_variable_parts_with_an_ellipsis"
    result = subprocess.run(
        [sys.executable, *command[1:], test], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"1 passed in [\d.]+s", last), result.stdout


# -- refreshing the outputs a page shows ---------------------------------------------------------


def update_page(page: pathlib.Path) -> list[str]:
    """Rewrites the ```text block after each Python block of `page` with what the block prints
    now (adding one where a block prints and has none). A block with a `...` marker is kept
    while it still matches; the lines of those that no longer match are returned, to mark by
    hand. Runs until the page is stable (an added block moves the lines after it)."""
    import os
    import tempfile

    for _ in range(3):
        text = page.read_text(encoding="utf-8")
        namespace: dict = {"__name__": "__docs__"}
        pieces, pos, stale = [], 0, []
        fences = list(FENCE.finditer(text))
        kn.reset_default_graph()
        kn.manual_seed(0)
        cwd = os.getcwd()
        os.chdir(tempfile.mkdtemp())
        try:
            for i, m in enumerate(fences):
                if m.group(1) != "python" or m.start() < pos or not_run(text, m):
                    continue
                line = text.count("\n", 0, m.start()) + 1
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile("\n" * line + m.group(2), str(page), "exec"), namespace)
                printed = out.getvalue()
                pieces.append(text[pos : m.end()])
                pos = m.end()
                after = fences[i + 1] if i + 1 < len(fences) else None
                if after and after.group(1) == "text" and not text[m.end() : after.start()].strip():
                    shown = after.group(2)
                    if "..." in shown:
                        if not matches(shown, printed):
                            stale.append(f"{page.name}:{line}")
                        printed = shown
                    pieces.append(text[m.end() : after.start()] + f"```text\n{printed}```")
                    pos = after.end()
                elif printed:
                    pieces.append(f"\n\n```text\n{printed}```")
        finally:
            os.chdir(cwd)
        new = "".join(pieces) + text[pos:]
        page.write_text(new, encoding="utf-8")
        if new == text:
            return stale
    return stale


if __name__ == "__main__":  # python tests/test_docs.py docs/tutorials/07-compiler.md ...
    for name in sys.argv[1:]:
        for where in update_page(pathlib.Path(name).resolve()):
            print(f"{where}: the marked output no longer matches; update it by hand")
