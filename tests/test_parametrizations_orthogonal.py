"""`kn.nn.utils.parametrizations.orthogonal`, as torch 2.13's: the initial value (the weight
orthogonalized by QR), the parameters and buffers it makes, training steps (eager, and under
kn.compile with the module called in the compiled step), assignment through right_inverse,
each map with and without trivialization, tall, wide and batched weights, and its errors.
Expected values: torch 2.13 running the same code; orthogonality checked by Q^T Q = I."""

import numpy as np
import pytest

import kiln as kn

TOL = dict(rtol=1e-4, atol=1e-5)
CASES = [  # (weight shape, orthogonal_map, use_trivialization)
    ((3, 3), None, True),
    ((3, 3), "cayley", True),
    ((3, 3), "householder", True),
    ((3, 3), "householder", False),
    ((5, 3), None, True),
    ((3, 5), "matrix_exp", True),
    ((4, 3), "householder", False),
    ((2, 3, 3), None, True),
]


def _module(lib, shape, orthogonal_map, trivialization):
    w = np.random.default_rng(len(shape) * 10 + shape[-2]).standard_normal(shape)
    m = lib.nn.Linear(shape[-1], shape[-2])
    with lib.no_grad():
        m.bias.fill_(0.1)
    m.weight = lib.nn.Parameter(lib.tensor(w.astype(np.float32)))
    lib.nn.utils.parametrizations.orthogonal(
        m, orthogonal_map=orthogonal_map, use_trivialization=trivialization
    )
    return m


def _train(lib, m, compiled: bool, steps: int = 2):
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    x = lib.tensor(np.linspace(-1, 1, 2 * m.in_features, dtype=np.float32).reshape(2, -1))

    def step(x):
        opt.zero_grad()
        (m(x) ** 2).sum().backward()
        opt.step()

    compiled_step = kn.compile(step) if compiled else step

    def run():
        compiled_step(x)

    for _ in range(steps):
        run()
    return run


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_orthogonal_matches_torch(case):
    torch = pytest.importorskip("torch")
    m, tm = _module(kn, *case), _module(torch, *case)
    q = m.weight.detach().numpy()
    np.testing.assert_allclose(q, tm.weight.detach().numpy(), **TOL)
    tall = q if q.shape[-2] >= q.shape[-1] else np.swapaxes(q, -1, -2)
    gram = np.swapaxes(tall, -1, -2) @ tall
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape),
                               atol=1e-5)  # fmt: skip
    names = ([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()])
    assert names == ([n for n, _ in tm.named_parameters()], [n for n, _ in tm.named_buffers()])
    if case[0][-2] != case[0][-1] or len(case[0]) > 2:
        return  # trained, the random columns torch's base adds to a tall one would differ
    _train(kn, m, compiled=False)
    _train(torch, tm, compiled=False)
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_under_compile_matches_torch(orthogonal_map):
    """The compiled step traces the map and its gradient to `original`; an assignment
    between compiled steps (a new `base` buffer) is where the next one starts."""
    torch = pytest.importorskip("torch")
    case = ((3, 3), orthogonal_map, True)
    m, tm = _module(kn, *case), _module(torch, *case)
    run = _train(kn, m, compiled=True)
    tstep = _train(torch, tm, compiled=False)
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)
    w = np.linalg.qr(np.arange(9.0).reshape(3, 3) + np.eye(3))[0].astype(np.float32)
    m.weight = kn.tensor(w)
    tm.weight = torch.tensor(w)
    run()
    tstep()
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)


def test_orthogonal_errors_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (kn, torch):
        orthogonal = lib.nn.utils.parametrizations.orthogonal
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
            orthogonal(lib.nn.Linear(3, 3), "bias")
        with pytest.raises(ValueError, match='has to be one of "matrix_exp", "cayley"'):
            orthogonal(lib.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
            orthogonal(lib.nn.Linear(3, 3), "w")
        m = orthogonal(lib.nn.Linear(3, 3), use_trivialization=False)
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = lib.eye(3)
        with pytest.raises(ValueError, match=r"of shape .*3, 3.*Got a tensor of shape .*2, 2"):
            orthogonal(lib.nn.Linear(3, 3)).weight = lib.eye(2)


def test_skip_init_as_torch():
    """`skip_init` builds the module with uninitialized memory and leaves the random stream
    as it was (torch: on the meta device nothing is drawn); a class without `device`
    refused with torch's RuntimeError."""
    torch = pytest.importorskip("torch")
    for lib in (kn, torch):
        lib.manual_seed(3)
        want = lib.rand(4)
        lib.manual_seed(3)
        m = lib.nn.utils.skip_init(lib.nn.Linear, 6, 2, bias=False)
        assert type(m) is lib.nn.Linear and tuple(m.weight.shape) == (2, 6)
        assert m.bias is None and m.weight.requires_grad
        np.testing.assert_array_equal(lib.rand(4).numpy(), want.numpy())
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
        with pytest.raises(RuntimeError, match="Expected a Module"):
            lib.nn.utils.skip_init(int)
