"""L-BFGS, PyTorch's `torch.optim.LBFGS`: an eager optimizer whose `step(closure)`
re-evaluates the loss several times. Written as PyTorch's own optimizers are (its state in
`self.state`), so it has no graph-mode form."""

from __future__ import annotations

from .. import frontend as F
from ..eager import enable_grad, no_grad, zeros
from ..errors import ArgumentError, UsageError
from .optimizer import Optimizer

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """L-BFGS with PyTorch's options and algorithm: two-loop recursion over the last
    `history_size` curvature pairs, a first step of `min(1, 1/|g|_1) * lr`, then steps of
    `lr` (no line search) or a strong-Wolfe line search (`line_search_fn="strong_wolfe"`);
    stops after `max_iter` iterations, `max_eval` evaluations, or the tolerances.

    >>> import kiln as kn
    >>> w = kn.tensor([3.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.LBFGS([w], lr=1.0)
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - 1.0) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure); [round(v, 5) for v in w.tolist()]  # a quadratic's minimum
    [1.0, 1.0]
    """

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        if not 0.0 <= lr:
            raise ArgumentError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)  # fmt: skip
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ArgumentError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # A complex parameter is its pairs of reals here, as in PyTorch's: its gradient and
    # steps are vectors of twice its numel.

    def _gather_flat_grad(self):
        views = [zeros(p.numel(), dtype=p.dtype) if p.grad is None
                 else p.grad.to_dense().reshape(-1)  # (a sparse gradient, as PyTorch's)
                 for p in self._params]  # fmt: skip
        views = [F.view_as_real(v).reshape(-1) if v.dtype.kind == "c" else v for v in views]
        return F.cat(views, 0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            n = p.numel() * (2 if p.dtype.kind == "c" else 1)
            part = update[offset : offset + n]
            if p.dtype.kind == "c":
                part = F.view_as_complex(part.reshape(*p.shape, 2))
            p.add_(part.reshape(p.shape), alpha=step_size)
            offset += n

    def _directional_evaluate(self, closure, x, t, d) -> tuple:
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    @no_grad()
    def step(self, closure):  # noqa: C901 — one algorithm, as PyTorch writes it
        """One optimization run of up to `max_iter` iterations; `closure` clears the
        gradients, computes the loss, calls backward and returns the loss. Returns the loss
        of the first evaluation."""
        if closure is None:
            raise UsageError("LBFGS requires a closure")
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn = group["line_search_fn"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps = state.get("old_dirs"), state.get("old_stps")
        ro, h_diag = state.get("ro"), state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        opt_cond = False
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, h_diag = flat_grad.neg(), [], [], [], 1
            else:
                d, h_diag = self._direction(state, flat_grad, prev_flat_grad, d, t,
                                            old_dirs, old_stps, ro, h_diag)  # fmt: skip
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = F.dot(flat_grad, d)
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":  # checked here, as PyTorch checks it
                    raise UsageError("only 'strong_wolfe' is supported")
                from .line_search import strong_wolfe

                x = [p.clone() for p in self._params]

                def obj(x_, t_, d_):
                    return self._directional_evaluate(closure, x_, t_, d_)

                loss, flat_grad, t, ls_func_evals = strong_wolfe(obj, x, t, d, loss, flat_grad,
                                                                 gtd)  # fmt: skip
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if (d * t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)  # fmt: skip
        return orig_loss

    def _direction(self, state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro, h_diag):
        """The two-loop recursion: the new direction from the curvature pairs, after adding
        the last pair when it has positive curvature (`ys > 1e-10`)."""
        y = flat_grad - prev_flat_grad
        s = d * t
        ys = F.dot(y, s)
        if ys > 1e-10:
            if len(old_dirs) == self.param_groups[0]["history_size"]:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            h_diag = ys / F.dot(y, y)
        al = state.setdefault("al", [None] * self.param_groups[0]["history_size"])
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = F.dot(old_stps[i], q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i].item())
        r = q * h_diag
        for i in range(len(old_dirs)):
            be_i = F.dot(old_dirs[i], r) * ro[i]
            r.add_(old_stps[i], alpha=(al[i] - be_i).item())
        return r, h_diag
