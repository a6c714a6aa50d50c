"""Which values the gradient program of a trace (kiln/tracing/traced.py) is fed: the
forward values it reads, which the forward program returns (`backward_inputs`), and the
inputs eager backward gives zeros where the gradient graph has no path (`zero_in_eager`)."""

from __future__ import annotations

from ..ops.dynamic import with_binders

__all__ = ["backward_inputs", "zero_in_eager"]


def backward_inputs(nodes, cts, grads) -> tuple[list, list]:
    """(feeds, variables) of the gradient program: the values it uses that exist before the
    cotangents do (placeholders and forward intermediates; the forward program returns the
    latter, so backward never recomputes the forward nor redraws its random values; views
    are recomputed from what they view), and the Variables it reads.

    >>> import kiln as kn
    >>> tf = kn.trace(lambda x: (x * x).sum(), kn.ones(2, requires_grad=True))
    >>> feeds, variables = backward_inputs(tf.graph.nodes, tf.cts, tf.grads)
    >>> [f.name for f in feeds], variables
    (['x'], [])
    """
    after = {id(c) for c in cts}
    feeds, variables, seen = [], [], set()

    def use(s):
        if id(s) in after or id(s) in seen:
            return
        seen.add(id(s))
        if s.op.name == "variable":
            variables.append(s)
        elif "view" in s.op.tags and s.node.inputs and s.op.name != "get":
            # cheap: recomputed from what it views (not an element of a tuple, which has no
            # value of its own to feed)
            for i in s.node.inputs:
                use(i)
        elif s.op.name != "constant":
            feeds.append(s)

    for node in nodes:
        if any(id(i) in after for i in node.inputs):
            after.add(id(node.out))
    stack, visited = list(grads), set()
    while stack:  # from the gradients back, through the values made after the cotangents
        s = stack.pop()
        if id(s) not in visited:
            visited.add(id(s))
            if id(s) in after:
                stack.extend(s.node.inputs)
            else:
                use(s)
    # a length the run binds that only attrs read (`sum_to`'s operand shape): the value that
    # first has it is fed, so its shape binds it (kiln/ops/dynamic.py)
    backward = {id(n) for n in nodes if id(n.out) in visited and id(n.out) in after}
    for s in with_binders(nodes, backward, ()):
        if id(s) not in after and id(s) not in seen:
            seen.add(id(s))
            feeds.append(s)
    return feeds, variables


def zero_in_eager(x, nodes, reached) -> bool:
    """Whether eager backward gives `x` zeros where the gradient graph has no path: `x` reaches
    the outputs through an op without a gradient rule ("nondiff": floor, round…), which eager
    mode (as PyTorch) treats as having zero cotangents.

    >>> import kiln as kn
    >>> tf = kn.trace(lambda x: x.floor().sum(), kn.ones(2))
    >>> x = tf.inputs[0]
    >>> zero_in_eager(x, tf.graph.nodes, {id(n.out) for n in tf.graph.nodes})
    True
    """
    seen = {id(x)}
    for node in nodes:
        if id(node.out) in reached and any(id(i) in seen for i in node.inputs):
            if "nondiff" in node.op.tags:
                return True
            seen.add(id(node.out))
    return False
