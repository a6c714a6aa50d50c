"""kiln's forward hooks against PyTorch's `with_kwargs` and `always_call` options (kiln had no
such keywords: a TypeError). Each case runs the same hooks on a torch and a kiln module and
compares what the hooks saw and what the call returned."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _scaled(lib):
    class Scaled(lib.nn.Module):
        def forward(self, x, scale=1.0, *, shift=0.0):
            if scale == 0:
                raise ValueError("scale must not be 0")
            return x * scale + shift

    return Scaled()


@pytest.mark.parametrize("lib", [torch, kn], ids=["torch", "kiln"])
def test_hooks_with_kwargs_see_and_replace_kwargs(lib):
    m, seen = _scaled(lib), []

    def pre(mod, args, kwargs):
        seen.append(("pre", len(args), sorted(kwargs)))
        return args, {**kwargs, "shift": 10.0}

    def post(mod, args, kwargs, out):
        seen.append(("post", sorted(kwargs.items())))
        return out + 1

    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(post, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: seen.append(("plain", len(args))))
    out = m(lib.ones(2), scale=3.0)
    assert out.tolist() == [14.0, 14.0]  # 1 * 3 + 10, then + 1 (torch gives the same)
    assert seen == [("pre", 1, ["scale"]), ("post", [("scale", 3.0), ("shift", 10.0)]),
                    ("plain", 1)]  # fmt: skip


def test_hooks_with_kwargs_match_torch():
    results = []
    for lib in (torch, kn):
        m = _scaled(lib)
        m.register_forward_pre_hook(lambda mod, a, kw: ((a[0] * 2,), {"scale": kw["scale"] + 1}),
                                    with_kwargs=True)  # fmt: skip
        m.register_forward_hook(lambda mod, a, kw, out: out - kw["scale"], with_kwargs=True)
        results.append(m(lib.tensor([1.0, -2.0]), scale=2.0).tolist())
    assert results[0] == results[1]


@pytest.mark.parametrize("lib", [torch, kn], ids=["torch", "kiln"])
def test_pre_hook_with_kwargs_bad_result_raises(lib):
    m = _scaled(lib)
    m.register_forward_pre_hook(lambda mod, a, kw: a[0], with_kwargs=True)
    with pytest.raises(RuntimeError, match="tuple of \\(new_args, new_kwargs\\)"):
        m(lib.ones(2), 2.0)


@pytest.mark.parametrize("lib", [torch, kn], ids=["torch", "kiln"])
def test_always_call_hook_runs_when_forward_raises(lib):
    m, seen = _scaled(lib), []
    m.register_forward_hook(lambda mod, a, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, a, out: seen.append(("plain", out)))
    with pytest.raises(ValueError, match="scale must not be 0"):
        m(lib.ones(2), 0)
    assert seen == [("always", None)]
    seen.clear()
    out = m(lib.ones(1), 2)
    assert [s[0] for s in seen] == ["always", "plain"]  # once each on success
    assert np.asarray(seen[0][1].tolist()) == out.tolist()


@pytest.mark.parametrize("lib", [torch, kn], ids=["torch", "kiln"])
def test_always_call_hook_error_is_only_warned(lib):
    m = _scaled(lib)

    def bad(mod, a, out):
        raise KeyError("from hook")

    m.register_forward_hook(bad, always_call=True)
    with pytest.warns(UserWarning, match="always_call=True"):
        with pytest.raises(ValueError, match="scale must not be 0"):
            m(lib.ones(2), 0)


def test_removed_kwargs_hook_no_longer_runs():
    m, seen = _scaled(kn), []
    h = m.register_forward_hook(lambda *a: seen.append(len(a)), with_kwargs=True)
    m(kn.ones(1))
    h.remove()
    m(kn.ones(1))
    assert seen == [4]
