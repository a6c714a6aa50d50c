"""What the shapescatter ports (test_port_pt_shapescatter_*.py) share."""


def grad_of(lib, y, *xs):
    """The gradients by `xs` of sum(y * w), w a fixed ramp (so each element's weight
    differs), for `y` one result of `lib` (torch or kiln) or a tuple of them; None for an
    input the results do not use."""
    ys = y if isinstance(y, (tuple, list)) else (y,)
    total = sum((t * lib.arange(t.numel(), dtype=t.dtype).reshape(t.shape)).sum() for t in ys)
    return lib.autograd.grad(total, xs, allow_unused=True)
