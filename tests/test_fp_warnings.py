"""Eager ops give inf and nan without NumPy's RuntimeWarnings, as PyTorch's do (torch 2.13:
`torch.tensor([0.]).log()` warns nothing), and under `-W error` they still return inf and
nan rather than raising. (kiln's filter for those warnings is set when kiln is imported, and
put back when a `warnings.catch_warnings()` block that imported kiln, as pytest's collection
does, drops it at its end; where the user's filters make the warnings errors, the dispatch
runs the kernel again with errors ignored.) Expected values: IEEE 754
(log 0 = -inf, log -1 = nan, 1/0 = inf, sqrt -1 = nan, 1e38 * 1e38 = inf in float32)."""

import subprocess
import sys
import warnings

import numpy as np

import kiln as kn

INF, NAN = float("inf"), float("nan")


def _results():
    x = kn.tensor([0.0, 1.0, -1.0])
    y = x.clone().requires_grad_()
    kn.log(y).sum().backward()
    return [
        x.log(), kn.log(x), x / 0, kn.sqrt(x), (x * 1e38) * 1e38, x.reciprocal(),
        kn.log(x + 0), x.log(), y.grad,
        kn.compile(lambda t: kn.log(t))(kn.tensor([0.0, -1.0])),
    ]  # fmt: skip


EXPECTED = [
    [-INF, 0.0, NAN], [-INF, 0.0, NAN], [NAN, INF, -INF], [0.0, 1.0, NAN], [0.0, INF, -INF],
    [INF, 1.0, -1.0], [-INF, 0.0, NAN], [-INF, 0.0, NAN], [INF, 1.0, -1.0], [-INF, NAN],
]  # fmt: skip


def _check(results):
    for got, want in zip(results, EXPECTED, strict=True):
        np.testing.assert_array_equal(got.detach().numpy(), np.array(want, np.float32))


def test_values_not_errors_when_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(_results())


def test_a_fresh_process_prints_no_warning_and_runs_under_w_error():
    code = "import kiln as kn; print(kn.tensor([0.0, -1.0]).log().tolist())"
    for flags in ([], ["-W", "error"]):
        done = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == "[-inf, nan]\n" and "Warning" not in done.stderr


def test_users_own_numpy_warnings_are_left_alone():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # NOTE: the filter a fresh process has for these
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        np.log(np.zeros(1))
    assert any("divide by zero" in str(w.message) for w in caught)


# a chain that warns in NumPy at each step: 0 * inf, log 0, 1/0, overflow; cumsum and
# cumprod (NumPy's accumulate), det and logdet (NumPy's linalg), whose warnings come from
# NumPy's own modules
_WARNING_OPS = """
x = kn.tensor([0.0, -1.0, float("inf"), 3e38])
m = kn.tensor([[3e38, 3e38], [3e38, -3e38]])
values = [x.log(), x / 0, x * x, kn.cumprod(kn.tensor([2.0, 0.0, float("inf")]), 0),
          kn.cumsum(x * 2, 0), kn.linalg.det(m), kn.logdet(m), kn.sqrt(x),
          kn.compile(lambda t: kn.log(t))(x)]
"""


def test_no_warning_after_an_import_inside_catch_warnings():
    """kiln imported inside `warnings.catch_warnings()` (as pytest's collection imports it):
    the filter the block dropped at its end is back, for ops after it and inside later
    blocks that record warnings (as pytest's around each test)."""
    code = (
        "import warnings\n"
        "with warnings.catch_warnings():\n"
        "    import kiln as kn\n"
        f"{_WARNING_OPS}\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        f"{_WARNING_OPS.replace(chr(10), chr(10) + '    ')}\n"
        "print(len(caught), [str(w.message) for w in caught])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0 []\n" and "Warning" not in done.stderr, (done.stdout, done.stderr)


def test_no_warning_in_this_process():
    """Here kiln was imported by pytest's collection, inside its catch_warnings."""
    namespace = {"kn": kn}
    with warnings.catch_warnings(record=True) as caught:
        exec(_WARNING_OPS, namespace)  # noqa: S102 — the module's own text, as the subprocess runs it
    assert [str(w.message) for w in caught] == []
    assert np.isnan(namespace["values"][0].numpy()[1])  # log -1, as computed
