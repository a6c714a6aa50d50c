"""The runner behind tests/test_tutorial_snippets.py: each snippet is a PyTorch tutorial's
code written against module arguments named as the tutorial imports them (`torch`, `nn`,
`F`, `optim`, `data` for torch.utils.data), run once with PyTorch and once with kiln passed
in their place, the rename a user makes (`import kiln as torch`).

The only thing a snippet does that the tutorial does not is talk to `R`:
- `R.data(*shape)` / `R.labels(n, k)`: NumPy data with a fixed seed, in place of downloads;
- `R.sync(obj)`: after the torch run, kiln's freshly made weights (a module, or tensors made
  with torch.randn) are overwritten with the values torch drew, so both runs start alike;
  without torch it does nothing;
- `R.out(name, value)`: a printed value, compared between the runs;
- `R.check(cond)`: an invariant the tutorial states (checked in both runs, and the only check
  when torch is not installed);
- `R.compile(fn)`: the training-step function, wrapped with `kn.compile` in the compiled
  variant of a snippet (torch's run stays eager: it is the reference).
"""

import re

import numpy as np

import kiln as kn
from tests.ports.port_common import to_numpy as port_array

# float32 training loops of a few steps; see tests/ports/port_common.py for the reasoning.
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")
TOL = {"rtol": 2e-4, "atol": 2e-5}


def to_numpy(v):
    """A snapshot of a torch or kiln tensor (or number) as a NumPy array: a copy, so that a
    later in-place change of the tensor does not change what was printed."""
    return port_array(v).copy()


class Runner:
    def __init__(self, lib, compiled=False, reference=None):
        self.lib, self.compiled = lib, compiled
        self.rng = np.random.default_rng(0)
        self.outputs = {}
        self.synced = []  # torch's values, in the order of the R.sync calls
        self.reference = reference  # the torch run's Runner, in the kiln run

    def data(self, *shape, dtype=np.float32):
        return self.rng.standard_normal(shape).astype(dtype)

    def uniform(self, *shape):
        return self.rng.random(shape).astype(np.float32)

    def labels(self, n, k):
        return self.rng.integers(0, k, n).astype(np.int64)

    def sync(self, *objs):
        for obj in objs:
            if self.reference is None:
                self.synced.append(self._values(obj))
            elif self.reference.synced:
                self._load(obj, self.reference.synced.pop(0))
        return objs[0] if len(objs) == 1 else objs

    @staticmethod
    def _values(obj):
        if hasattr(obj, "state_dict"):
            return {k: to_numpy(v) for k, v in obj.state_dict().items()}
        return to_numpy(obj)

    def _load(self, obj, values):
        if hasattr(obj, "state_dict"):
            obj.load_state_dict({k: kn.tensor(v) for k, v in values.items()})
        else:
            with kn.no_grad():
                obj.copy_(kn.tensor(values))

    def out(self, name, value):
        assert name not in self.outputs, name
        if isinstance(value, (list, tuple)) and value and hasattr(value[0], "shape"):
            value = [to_numpy(v) for v in value]
        elif hasattr(value, "shape") and not isinstance(value, np.ndarray):
            value = to_numpy(value)
        self.outputs[name] = value

    def check(self, cond, what=""):
        assert bool(cond), f"tutorial invariant failed with {self.lib.__name__}: {what}"

    def compile(self, fn):
        return kn.compile(fn) if self.compiled and self.lib is kn else fn


def modules(lib):
    """What the tutorial imports, as the snippet's keyword arguments."""
    return {
        "torch": lib,
        "nn": lib.nn,
        "F": lib.nn.functional,
        "optim": lib.optim,
        "data": lib.utils.data,
    }


def compare(name, got, want, tol):
    if isinstance(want, (list, tuple)) and not isinstance(got, np.ndarray):
        assert len(got) == len(want), name
        for i, (g, w) in enumerate(zip(got, want)):
            compare(f"{name}[{i}]", g, w, tol)
        return
    if isinstance(want, str):  # printed text: `torch.float32` is `kiln.float32` after the rename
        want, got = want.replace("torch.", ""), str(got).replace("kiln.", "")
        w_nums, g_nums = _NUMBER.findall(want), _NUMBER.findall(got)
        if w_nums and len(w_nums) == len(g_nums):  # numbers printed in text: compare as numbers
            assert _NUMBER.sub("#", got) == _NUMBER.sub("#", want), f"{name}: {got!r}, {want!r}"
            got, want = [float(v) for v in g_nums], [float(v) for v in w_nums]
    if isinstance(want, str) or isinstance(want, bool) or want is None:
        assert got == want, f"{name}: kiln {got!r}, torch {want!r}"
        return
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        assert type(got) is type(want), f"{name}: kiln {type(got)}, torch {type(want)}"
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"{name}: kiln shape {g.shape}, torch {w.shape}"
    if w.dtype.kind in "biu" or w.dtype == bool:
        assert g.dtype == w.dtype, f"{name}: kiln dtype {g.dtype}, torch {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=name)
    else:
        assert g.dtype == w.dtype, f"{name}: kiln dtype {g.dtype}, torch {w.dtype}"
        np.testing.assert_allclose(g, w, err_msg=name, **tol)


def run_snippet(fn, compiled=False, torch=None, tol=None):
    """Run `fn` with torch (when given) and with kiln; compare every R.out."""
    ref = None
    if torch is not None:
        ref = Runner(torch)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # these tiny programs: threads only contend (measured 8x)
        try:
            fn(ref, **modules(torch))
        finally:
            torch.set_num_threads(threads)
    got = Runner(kn, compiled=compiled, reference=ref)
    fn(got, **modules(kn))
    if ref is None:
        return
    assert list(got.outputs) == list(ref.outputs)
    for name, want in ref.outputs.items():
        compare(name, got.outputs[name], want, tol or TOL)


def registry():
    """(the list of a snippet file's snippets, the decorator `@snippet(compiled=False)` that
    adds one to it; `compiled`: its training step also runs under kn.compile)."""
    found = []

    def snippet(compiled=False):
        def register(fn):
            fn.compiled = compiled
            found.append(fn)
            return fn

        return register

    return found, snippet
