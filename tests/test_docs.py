"""The documentation is true: docs/errors.md's table matches the exception classes kiln
defines."""

import importlib
import pathlib
import re

import kiln as kn
import kiln.checkpoint
import kiln.passes
import kiln.runtime

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


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
        bases = [
            b for b in cls.__mro__[1:] if b not in (kn.KilnError, Exception, BaseException, object)
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
