"""The strong-Wolfe line search of `LBFGS(line_search_fn="strong_wolfe")`: bracketing with
cubic extrapolation, then zooming with safeguarded cubic interpolation (the algorithm of
Nocedal & Wright, ch. 3.5, in the form minFunc and PyTorch use)."""

from __future__ import annotations

from .. import frontend as F

__all__ = ["cubic_minimum", "strong_wolfe"]


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2,
    clipped to `bounds` (default: between x1 and x2); their midpoint if it has none.

    >>> cubic_minimum(0.0, 0.0, -1.0, 2.0, 0.0, 1.0)  # x^2 - 2x sampled at 0 and 2
    1.0
    """
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = d2_square**0.5
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


def _ordered(values) -> tuple[int, int]:
    """(index of the lower, index of the higher) of two function values."""
    return (0, 1) if values[0] <= values[-1] else (1, 0)


def strong_wolfe(obj, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step `t` along `d` from `x` meeting the strong Wolfe conditions (sufficient decrease
    `c1`, curvature `c2`); `obj(x, t, d)` gives (loss, flat gradient) there. Returns (loss,
    gradient, t, number of evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj(x, t, d)
    evals, ls_iter = 1, 0
    gtd_new = F.dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    # bracketing: grow the step until the interval holds a point meeting the conditions
    while ls_iter < max_ls:
        # NOTE: the curvature test comes between the two bracketing tests, as in PyTorch
        too_far = f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev)
        if not too_far and abs(gtd_new) <= -c2 * gtd:
            bracket, fs, gs, done = [t], [f_new], [g_new], True
            break
        if too_far or gtd_new >= 0:
            bracket, fs = [t_prev, t], [f_prev, f_new]
            gs, gtds = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        bounds = (t + 0.01 * (t - t_prev), t * 10)
        t_prev, t = t, cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds)
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = obj(x, t, d)
        evals += 1
        gtd_new = F.dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, fs, gs = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point meets the conditions
    insufficient = False
    low, high = _ordered(fs)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = cubic_minimum(bracket[0], fs[0], gtds[0], bracket[1], fs[1], gtds[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:  # too close to an end: move away from it
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = obj(x, t, d)
        evals += 1
        gtd_new = F.dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= fs[low]:
            bracket[high], fs[high], gs[high], gtds[high] = t, f_new, g_new.clone(), gtd_new
            low, high = _ordered(fs)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], fs[high], gs[high], gtds[high] = (
                    bracket[low],
                    fs[low],
                    gs[low],
                    gtds[low],
                )
            bracket[low], fs[low], gs[low], gtds[low] = t, f_new, g_new.clone(), gtd_new
    return fs[low], gs[low], bracket[low], evals
