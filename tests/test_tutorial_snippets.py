"""PyTorch's beginner tutorials, run as a new user would: the code as written, with `torch`
renamed to kiln (`torch.nn`, `torch.optim`, `torch.utils.data` to kiln's), the tutorials'
downloads replaced by random data of the same shapes. Each snippet runs with torch 2.13 and
with kiln from the same data and initial weights, and every printed value is compared
(expected values: torch 2.13's). Snippets with a training-step function also run with that
function wrapped in `kn.compile`. Without torch, each snippet runs with kiln alone and only
the invariants the tutorials state are checked."""

import pytest

from tests.tutorial_harness import run_snippet
from tests.tutorial_snippets_basics import SNIPPETS as BASICS
from tests.tutorial_snippets_blitz import SNIPPETS as BLITZ
from tests.tutorial_snippets_examples import SNIPPETS as EXAMPLES

try:
    import torch
except ImportError:  # the snippets still run, checking kiln's own invariants
    torch = None

SNIPPETS = BASICS + EXAMPLES + BLITZ
CASES = [(fn, False) for fn in SNIPPETS] + [(fn, True) for fn in SNIPPETS if fn.compiled]


@pytest.mark.parametrize(
    "fn,compiled", CASES, ids=[fn.__name__ + ("-compiled" if c else "") for fn, c in CASES]
)
def test_snippet(fn, compiled):
    run_snippet(fn, compiled=compiled, torch=torch)
