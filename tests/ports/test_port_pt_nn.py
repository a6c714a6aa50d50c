"""Module API scenarios after PyTorch's own `test/test_nn.py` (TestNN): registration rules,
containers, state_dict and its hooks, deepcopy, RNN and Embedding arguments. Each scenario is
written once against a module argument `lib` and run with PyTorch and with kiln; torch 2.13
is the oracle for every value, key list, shape, dtype and exception class compared here.
"""

import copy

from port_common import to_numpy

import kiln as kn


def outcome(fn, lib):
    """`fn(lib)` made comparable: tensors as (shape, dtype name, values), containers
    recursively, an exception as the name of its class."""
    try:
        return _plain(fn(lib))
    except Exception as e:  # noqa: BLE001 (the class is the result compared)
        return ("raised", type(e))


def _plain(v):
    if hasattr(v, "detach") and hasattr(v, "shape"):
        a = to_numpy(v)
        return ("tensor", tuple(a.shape), a.dtype.name, a.tolist())
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def same(fn, torch):
    """`fn` gives the same outcome with torch and with kiln (kiln's exception classes
    subclass the built-in class torch raises)."""
    want, got = outcome(fn, torch), outcome(fn, kn)
    if isinstance(want, tuple) and want[:1] == ("raised",):
        assert isinstance(got, tuple) and got[:1] == ("raised",), got
        assert issubclass(got[1], want[1]), (got[1], want[1])
        return
    assert got == want


# -- containers ------------------------------------------------------------------------------


def sequential_insert_negative(lib):
    """Sequential.insert(-1, m) puts m before the last child, as list.insert does."""
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.ELU())
    s.insert(-1, nn.Sigmoid())
    s.insert(-4, nn.GELU())
    return [type(m).__name__ for m in s], list(s._modules)


def test_sequential_insert_negative_index(torch):
    same(sequential_insert_negative, torch)


# -- copying ---------------------------------------------------------------------------------


def deepcopy_drops_parameter_grad(lib):
    """copy.deepcopy of a module: its Parameters are new leaves without `.grad`, shared
    Parameters and submodules stay shared in the copy."""
    nn = lib.nn
    m = nn.Linear(2, 2)
    m.tied = m.weight
    m(lib.ones(1, 2)).sum().backward()
    c = copy.deepcopy(m)
    shared = (c.tied is c.weight, c.weight is not m.weight, c.weight.requires_grad)
    return c.weight.grad is None, c.bias.grad is None, shared, m.weight.grad is not None


def test_deepcopy_drops_parameter_grad(torch):
    same(deepcopy_drops_parameter_grad, torch)


# -- layer arguments -------------------------------------------------------------------------


def embedding_weight_shape_checked(lib):
    return lib.nn.Embedding(3, 3, _weight=lib.ones(3, 2))


def test_embedding_weight_shape_is_checked(torch):
    same(embedding_weight_shape_checked, torch)


def embedding_weight_dtype_kept(lib):
    """`_weight` keeps its dtype where no dtype is given."""
    nn, w = lib.nn, lib.ones(3, 2, dtype=lib.float64)
    return nn.Embedding(3, 2, _weight=w).weight.dtype == lib.float64, nn.EmbeddingBag(
        3, 2, _weight=w
    ).weight.dtype == lib.float64


def test_embedding_weight_keeps_its_dtype(torch):
    same(embedding_weight_dtype_kept, torch)


def embedding_bag_weight_shape_checked(lib):
    return lib.nn.EmbeddingBag(3, 3, _weight=lib.ones(3, 2))


def test_embedding_bag_weight_shape_is_checked(torch):
    same(embedding_bag_weight_shape_checked, torch)


# -- registration ----------------------------------------------------------------------------


def buffer_aliases(lib):
    """A buffer registered from a plain tensor, assigned to another attribute, stays a plain
    attribute there; one made as nn.Buffer is registered again (named_buffers with
    remove_duplicate=False lists both names)."""
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("plain", lib.zeros(2))
            self.plain_alias = self.plain
            self.made = nn.Buffer(lib.ones(3))
            self.made_alias = self.made
            self.child = nn.Linear(2, 2)
            self.child.register_buffer("scale", lib.ones(1))
            self.scale = self.child.scale

    m = M()
    names = [k for k, _ in m.named_buffers(remove_duplicate=False)]
    return list(m.state_dict()), names, [k for k, _ in m.named_buffers()], m.plain_alias.shape


def test_buffer_alias_registers_only_nn_buffer(torch):
    same(buffer_aliases, torch)


def _attempt(action) -> str:
    """'ok', or the name of the built-in exception class `action()` raises."""
    try:
        action()
    except Exception as e:  # noqa: BLE001 (the class is the result compared)
        return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    return "ok"


def register_rules(lib):
    """register_parameter / register_buffer / add_module refuse a name that is an attribute
    of another kind (KeyError) and a value of the wrong type (TypeError)."""
    nn = lib.nn
    m = nn.Module()
    m.plain = 5
    m.register_buffer("buf", lib.ones(1))
    m.w = nn.Parameter(lib.ones(1))
    m.sub = nn.ReLU()
    tried = [
        _attempt(lambda: m.register_parameter("buf", nn.Parameter(lib.ones(1)))),
        _attempt(lambda: m.register_parameter("sub", None)),
        _attempt(lambda: m.register_parameter("plain", None)),
        _attempt(lambda: m.register_parameter("forward", None)),
        _attempt(lambda: m.register_buffer("w", lib.ones(1))),
        _attempt(lambda: m.register_buffer("sub", lib.ones(1))),
        _attempt(lambda: m.register_buffer("training", lib.ones(1))),
        _attempt(lambda: m.register_buffer("x", 5)),
        _attempt(lambda: m.add_module("w", nn.Tanh())),
        _attempt(lambda: m.add_module("buf", nn.Tanh())),
        _attempt(lambda: m.add_module("sub", nn.Tanh())),
        _attempt(lambda: m.register_buffer("buf", None)),
    ]
    tables = list(m._parameters), list(m._buffers), list(m._modules)
    return tried, tables, type(m.sub).__name__, list(m.state_dict())


def test_register_rules(torch):
    same(register_rules, torch)


def setattr_rules(lib):
    """Assignment: None clears a parameter, buffer or child (keeping the name); another
    kind of value on a parameter's or child's name is a TypeError; a Parameter or Module
    replaces a member of another kind; an nn.Buffer onto a plain attribute is a KeyError."""
    nn = lib.nn
    m = nn.Module()
    m.w = nn.Parameter(lib.ones(1))
    m.register_buffer("buf", lib.ones(1))
    m.sub = nn.ReLU()
    m.other = nn.ReLU()
    m.plain = 1
    tried = [
        _attempt(lambda: setattr(m, "w", nn.ReLU())),
        _attempt(lambda: setattr(m, "w", nn.Buffer(lib.ones(1)))),
        _attempt(lambda: setattr(m, "w", lib.ones(1))),
        _attempt(lambda: setattr(m, "sub", nn.Buffer(lib.ones(1)))),
        _attempt(lambda: setattr(m, "sub", 3)),
        _attempt(lambda: setattr(m, "buf", 3)),
        _attempt(lambda: setattr(m, "plain", nn.Buffer(lib.ones(1)))),
    ]
    m.sub = None
    m.other = nn.Parameter(lib.ones(2))
    m.buf = nn.ReLU()
    m.w = None
    tables = list(m._parameters), list(m._buffers), list(m._modules)
    return tried, tables, m.sub, m.w, m.plain, list(m.state_dict())


def test_setattr_rules(torch):
    same(setattr_rules, torch)


def module_dict_update_from_module_dict(lib):
    nn = lib.nn
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    other = nn.ModuleDict()
    other.update(md)
    other.update([("c", nn.ELU())])
    tried = [_attempt(lambda: other.update(nn.ReLU())), _attempt(lambda: other.update(5))]
    return list(other), other["a"] is md["a"], tried


def test_module_dict_update_from_module_dict(torch):
    same(module_dict_update_from_module_dict, torch)


def parameter_list_operations(lib):
    """ParameterList: `+=`, a slice is a ParameterList of the same Parameters, tensors
    become Parameters and other values are kept as they are (not in state_dict)."""
    nn = lib.nn
    pl = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3)])
    before = pl
    pl += [lib.ones(1)]
    part = pl[1:]
    pl.append("note")
    pl.append(None)
    pl[0] = lib.full((2,), 3.0)
    tried = [_attempt(lambda: pl[7]), _attempt(lambda: pl.extend(lib.ones(2))),
             _attempt(lambda: pl.__setitem__(9, lib.ones(1)))]  # fmt: skip
    kinds = [type(p).__name__ for p in pl]
    names = list(pl.state_dict()), [k for k, _ in pl.named_parameters()]
    return (
        pl is before,
        type(part).__name__,
        len(part),
        part[0] is pl[1],
        kinds,
        pl[3],
        names,
        tried,
    )


def test_parameter_list_operations(torch):
    same(parameter_list_operations, torch)


def parameter_dict_operations(lib):
    """ParameterDict's dict methods: copy shares the Parameters, setdefault, fromkeys,
    popitem (last in), `|`, `|=`, reversed, clear; values other than tensors are kept."""
    nn = lib.nn
    pd = nn.ParameterDict({"b": nn.Parameter(lib.ones(2)), "a": lib.zeros(3)})
    c = pd.copy()
    got = [type(c).__name__, list(c), c["b"] is pd["b"]]
    got.append(tuple(pd.setdefault("e", nn.Parameter(lib.ones(4))).shape))
    got.append(tuple(pd.setdefault("e", nn.Parameter(lib.ones(1))).shape))
    got.append(list(nn.ParameterDict().fromkeys(["x", "y"], nn.Parameter(lib.ones(1)))))
    union = pd | nn.ParameterDict({"z": nn.Parameter(lib.ones(1))})
    got.append((type(union).__name__, list(union), list(pd)))
    pd |= {"d": lib.ones(1)}
    got.append((list(pd), list(reversed(pd))))
    pd["note"] = "text"
    got.append((pd["note"], list(pd.state_dict()), len(pd)))
    key, value = pd.popitem()
    got.append((key, value, list(pd)))
    pd.clear()
    got.append((len(pd), list(pd.state_dict())))
    return got


def test_parameter_dict_operations(torch):
    same(parameter_dict_operations, torch)


def rnn_weight_lists(lib):
    """all_weights and _flat_weights_names: per layer and direction, PyTorch's order."""
    nn = lib.nn
    got = []
    for m in (nn.LSTM(3, 4, num_layers=2, bidirectional=True), nn.LSTM(3, 4, proj_size=2),
              nn.GRU(3, 4, bias=False), nn.RNN(3, 4, nonlinearity="relu")):  # fmt: skip
        names = m._flat_weights_names
        shapes = [[tuple(p.shape) for p in ps] for ps in m.all_weights]
        got.append((names, shapes, [p is getattr(m, n) for p, n in zip(m._flat_weights, names)]))
    return got


def test_rnn_all_weights(torch):
    same(rnn_weight_lists, torch)


def rnn_dropout_arguments(lib):
    """dropout=True is refused (ValueError); dropout on one layer warns."""
    import warnings

    nn = lib.nn
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.LSTM(3, 4, dropout=0.5)
        nn.GRU(3, 4, dropout=0.5, num_layers=2)
    categories = [w.category.__name__ for w in caught if "dropout" in str(w.message)]
    return categories, _attempt(lambda: nn.LSTM(3, 4, dropout=True))


def test_rnn_dropout_arguments(torch):
    same(rnn_dropout_arguments, torch)


def module_dir(lib):
    """dir(module) lists parameters, buffers and children (not a container's "0")."""
    nn = lib.nn
    m = nn.Sequential(nn.Linear(2, 2))
    m.register_buffer("stat", lib.ones(1))
    m.extra = nn.Parameter(lib.ones(1))
    m.head = nn.ReLU()
    names = dir(m)
    wanted = ["stat", "extra", "head", "forward", "training", "_modules", "0"]
    return [n in names for n in wanted], names == sorted(names), "weight" in dir(m[0])


def test_module_dir_lists_members(torch):
    same(module_dir, torch)


def non_persistent_buffer_through_none(lib):
    """A non-persistent buffer set to None, then to a tensor, stays out of state_dict."""
    nn = lib.nn
    m = nn.Module()
    m.buf = nn.Buffer(lib.ones(5), persistent=False)
    m.register_buffer("other", None, persistent=False)
    m.buf = None
    m.buf = lib.ones(5)
    m.other = lib.zeros(2)
    counts = len(list(m.buffers())), list(m.state_dict())
    m.buf = nn.Parameter(lib.ones(5))
    return counts, list(m.state_dict()), [k for k, _ in m.named_buffers()]


def test_non_persistent_buffer_through_none(torch):
    same(non_persistent_buffer_through_none, torch)


# -- state_dict ------------------------------------------------------------------------------


def load_pre_hook_sees_its_entries(lib):
    """A submodule's load pre-hook gets the entries under its prefix only; a rename it
    makes there is loaded."""
    nn = lib.nn
    seen = []

    def rename(mod, state, prefix, *rest):
        seen.append(sorted(state))
        if prefix + "w_old" in state:
            state[prefix + "weight"] = state.pop(prefix + "w_old")

    inner = nn.Linear(1, 1)
    inner.register_load_state_dict_pre_hook(rename)
    s = nn.Sequential(nn.Linear(1, 1), inner)
    state = {"0.weight": lib.ones(1, 1), "0.bias": lib.ones(1), "1.w_old": lib.full((1, 1), 4.0),
             "1.bias": lib.zeros(1)}  # fmt: skip
    keys = s.load_state_dict(state)
    return seen, list(keys.missing_keys), list(keys.unexpected_keys), inner.weight


def test_load_pre_hook_sees_its_entries(torch):
    same(load_pre_hook_sees_its_entries, torch)


def state_dict_overrides(lib):
    """A subclass's _save_to_state_dict / _load_from_state_dict overrides (calling super())
    change what state_dict saves and what load_state_dict reads, as in PyTorch."""
    nn = lib.nn

    class Legacy(nn.Linear):
        def _save_to_state_dict(self, destination, prefix, keep_vars):
            super()._save_to_state_dict(destination, prefix, keep_vars)
            destination[prefix + "scale"] = lib.ones(1)

        def _load_from_state_dict(self, state, prefix, *args):
            state.pop(prefix + "scale", None)
            if prefix + "w" in state:
                state[prefix + "weight"] = state.pop(prefix + "w")
            super()._load_from_state_dict(state, prefix, *args)

    s = nn.Sequential(nn.ReLU(), Legacy(1, 1))
    saved = list(s.state_dict())
    keys = s.load_state_dict({"1.w": lib.full((1, 1), 4.0), "1.bias": lib.zeros(1),
                              "1.scale": lib.ones(1)})  # fmt: skip
    return saved, list(keys.missing_keys), list(keys.unexpected_keys), s[1].weight


def test_state_dict_overrides(torch):
    same(state_dict_overrides, torch)


# -- class hierarchy -------------------------------------------------------------------------

# (a, b) pairs of nn classes where `issubclass(a, b)` differed from torch's: isinstance
# checks in user code (an init loop's `isinstance(m, nn.BatchNorm1d)`, `isinstance(m,
# nn.Dropout)` to change p) then caught other layers
SUBCLASS_PAIRS = [
    ("BatchNorm2d", "BatchNorm1d"), ("BatchNorm3d", "BatchNorm1d"),
    ("SyncBatchNorm", "BatchNorm1d"), ("Dropout1d", "Dropout"), ("Dropout2d", "Dropout"),
    ("Dropout3d", "Dropout"), ("FeatureAlphaDropout", "AlphaDropout"),
    ("AvgPool3d", "AvgPool2d"), ("CosineEmbeddingLoss", "MarginRankingLoss"),
    ("ReLU6", "Hardtanh"), ("UpsamplingNearest2d", "Upsample"),
    ("UpsamplingBilinear2d", "Upsample"), ("UpsamplingBilinear2d", "UpsamplingNearest2d"),
    ("ZeroPad1d", "ConstantPad1d"), ("ZeroPad2d", "ConstantPad2d"),
    ("ZeroPad3d", "ConstantPad3d"),
]  # fmt: skip


def class_hierarchy(lib):
    nn = lib.nn
    relu6 = nn.ReLU6()
    upsample = nn.UpsamplingBilinear2d(scale_factor=2)
    return ([issubclass(getattr(nn, a), getattr(nn, b)) for a, b in SUBCLASS_PAIRS],
            (relu6.min_val, relu6.max_val, repr(relu6)),
            (upsample.mode, upsample.align_corners, repr(upsample)),
            repr(nn.ZeroPad2d(1)), nn.ZeroPad2d(1).value)  # fmt: skip


def test_class_hierarchy_as_torch(torch):
    same(class_hierarchy, torch)


# -- torch.nn.modules ------------------------------------------------------------------------


def nn_modules_paths(lib):
    """The torch.nn.modules paths code names: the private bases in isinstance checks, the
    argument helpers, and the global forward hooks (run before the module's own)."""
    nn = lib.nn
    mods = nn.modules
    layers = [nn.BatchNorm2d(2), nn.SyncBatchNorm(2), nn.Conv1d(1, 1, 1), nn.Dropout2d(),
              nn.AlphaDropout(), nn.MSELoss(), nn.CrossEntropyLoss(),
              nn.InstanceNorm1d(2)]  # fmt: skip
    bases = [mods.batchnorm._BatchNorm, mods.conv._ConvNd, mods.dropout._DropoutNd,
             mods.loss._Loss, mods.loss._WeightedLoss, mods.instancenorm._InstanceNorm]  # fmt: skip
    kinds = [[isinstance(m, b) for b in bases] for m in layers]
    helpers = mods.utils._pair(3), mods.utils._triple((1, 2, 3)), mods.utils._single(4)
    seen = []
    pre = mods.module.register_module_forward_pre_hook(
        lambda m, args: seen.append(("pre", type(m).__name__))
    )
    post = mods.module.register_module_forward_hook(
        lambda m, args, out: seen.append(("post", type(m).__name__)) or out * 2
    )
    relu = nn.ReLU()
    relu.register_forward_hook(lambda m, args, out: seen.append(("own", type(m).__name__)))
    try:
        out = nn.Sequential(relu)(lib.ones(1))
    finally:
        pre.remove()
        post.remove()
    after = nn.ReLU()(lib.ones(1))
    same_class = mods.Linear is nn.Linear, mods.container.Sequential is nn.Sequential
    return kinds, helpers, seen, out, after, same_class


def test_nn_modules_paths(torch):
    same(nn_modules_paths, torch)


def failed_insert_keeps_container(lib):
    """Sequential.insert of something that is not a Module fails (AssertionError, as
    torch's) before changing the container."""
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    tried = _attempt(lambda: s.insert(1, [nn.ELU()]))
    return tried, [type(m).__name__ for m in s], list(s._modules)


def test_failed_insert_keeps_container(torch):
    same(failed_insert_keeps_container, torch)
    # (torch's ModuleList.insert(1, 3) stores the int; kiln refuses it, and keeps the list)
    ml = kn.nn.ModuleList([kn.nn.ReLU(), kn.nn.Tanh()])
    assert _attempt(lambda: ml.insert(1, 3)) == "TypeError"
    assert [type(m).__name__ for m in ml] == ["ReLU", "Tanh"]


def set_submodule_rules(lib):
    """set_submodule refuses to replace an attribute that is not a Module (AttributeError),
    with strict=True a missing one, and a value that is not a Module (ValueError)."""
    nn = lib.nn
    net = nn.Module()
    net.t = nn.Module()
    net.foo = "bar"
    net.gone = None
    lin = nn.Linear(1, 2)
    tried = [
        _attempt(lambda: net.set_submodule("foo", lin)),
        _attempt(lambda: net.set_submodule("forward", lin)),
        _attempt(lambda: net.set_submodule("t.x", lin, True)),
        _attempt(lambda: net.set_submodule("t", "bazz")),
        _attempt(lambda: net.set_submodule("a.l", lin)),
        _attempt(lambda: net.set_submodule("", lin)),
        _attempt(lambda: net.set_submodule("t.x", lin)),
        _attempt(lambda: net.set_submodule("t.x", nn.ReLU(), True)),
    ]
    return tried, net.foo, type(net.get_submodule("t.x")).__name__


def test_set_submodule_rules(torch):
    same(set_submodule_rules, torch)


def module_apply_fn(lib):
    """Module._apply(fn): an in-place fn changes each parameter and buffer (and gradient),
    an out-of-place one (a cast) replaces their data, integer buffers included; the
    Parameters stay the same objects."""
    nn = lib.nn
    m = nn.Sequential(nn.Linear(2, 1), nn.BatchNorm1d(1))
    with lib.no_grad():
        for p in m.parameters():
            p.fill_(0.5)
    m(lib.ones(3, 2)).sum().backward()
    weight = m[0].weight
    same_module = m._apply(lambda t: t.add_(1.0)) is m
    m._apply(lambda t: t.double())
    dtypes = [str(v.dtype).split(".")[-1] for v in m.state_dict().values()]
    grad_dtype = str(m[0].weight.grad.dtype).split(".")[-1]
    return same_module, m[0].weight is weight, m[0].weight, dtypes, grad_dtype, m[1].running_mean


def test_module_apply_fn(torch):
    same(module_apply_fn, torch)


def global_hook_under_compile(lib, jit=lambda f: f):
    """A global forward hook changes the compiled call's output while it is registered, and
    no longer once removed (the compiled program is made again)."""
    nn = lib.nn
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    with lib.no_grad():
        for p in m.parameters():
            p.fill_(0.5)
    step = jit(lambda x: m(x))
    x = lib.ones(1, 2)
    before = step(x)
    handle = nn.modules.module.register_module_forward_hook(lambda mod, args, out: out * 2)
    try:
        hooked = step(x), step(x)
    finally:
        handle.remove()
    return before, hooked, step(x)


def test_global_hook_under_compile(torch):
    want = outcome(global_hook_under_compile, torch)
    assert outcome(lambda lib: global_hook_under_compile(lib, kn.compile), kn) == want


def state_dict_calls_child_overrides(lib):
    """A parent's state_dict goes through a child's own state_dict override (torch calls each
    child's), and the deprecated positional (destination, prefix, keep_vars) are read, with a
    FutureWarning."""
    import warnings

    nn = lib.nn

    class Tagged(nn.Linear):
        def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
            out = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
            out[prefix + "tag"] = lib.ones(1)
            return out

    keys = list(nn.Sequential(nn.ReLU(), Tagged(1, 1)).state_dict())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = nn.Linear(1, 1).state_dict(None, "p.", True)
    kinds = [w.category.__name__ for w in caught]
    return keys, list(old), type(old["p.weight"]).__name__, kinds


def test_state_dict_calls_child_overrides(torch):
    same(state_dict_calls_child_overrides, torch)
