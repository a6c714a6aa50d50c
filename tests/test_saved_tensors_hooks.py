"""kn.autograd.graph.saved_tensors_hooks and save_on_cpu (torch.autograd.graph's, from the
"Autograd mechanics" notes): what backward reads is what unpack_hook returns, each packed
value is unpacked once, the innermost hooks win, and nothing is packed outside the block.
Expected gradients: by hand (d/da of a * b is b)."""

import pytest

import kiln as kn


def test_unpacked_values_are_used_once_each():
    packed, unpacked = [], []
    a = kn.tensor([1.0, 2.0], requires_grad=True)
    b = kn.tensor([3.0, 5.0])
    with kn.autograd.graph.saved_tensors_hooks(
        lambda t: packed.append(t) or len(packed) - 1,
        lambda i: unpacked.append(i) or packed[i] * 10,
    ):
        y = a * b
    z = (y * y).sum()  # outside the block: not packed
    n = len(packed)
    z.backward()
    assert sorted(unpacked) == list(range(n)) and n >= 1
    # dz/da = 2 y * b, with the mul's saved b unpacked as 10 b
    assert a.grad.tolist() == [2 * 3.0 * 30.0, 2 * 10.0 * 50.0]


def test_innermost_hooks_and_retain_graph():
    seen = []
    a = kn.tensor([2.0], requires_grad=True)
    with kn.autograd.graph.saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with kn.autograd.graph.saved_tensors_hooks(lambda t: seen.append("inner") or t,
                                                   lambda t: t):  # fmt: skip
            y = (a * a).sum()
    assert seen and set(seen) == {"inner"}
    y.backward(retain_graph=True)
    y.backward()
    assert a.grad.tolist() == [8.0]  # 2 a, twice


def test_unpack_must_return_a_tensor():
    a = kn.tensor([2.0], requires_grad=True)
    with kn.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 1.0):
        y = (a.exp()).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()


def test_save_on_cpu_gives_the_same_gradients():
    x = kn.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (x.sin() * x).sum().backward()
    want = x.grad.clone()
    x.grad = None
    with kn.autograd.graph.save_on_cpu(pin_memory=True):
        y = (x.sin() * x).sum()
    y.backward()
    kn.testing.assert_close(x.grad, want)


def test_ops_inside_the_pack_hook_are_not_packed_again():
    # torch 2.13 gives [2., 2., 2.]; kiln recursed (the hook's own op packed, and so on)
    x = kn.ones(3, requires_grad=True)
    with kn.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
