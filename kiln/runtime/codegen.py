"""Planned, generated programs: for one input signature, concrete shapes, a schedule, a memory
plan over one arena, and straight-line Python that calls each kernel with `out=` into a view
of the arena, so a steady-state call allocates only its outputs.

The generated text never embeds user-controlled strings: identifiers are `v0, v1…`, and
kernels, attrs and constants are bound as values in the function's namespace.
"""

from __future__ import annotations

import collections
import functools
import math
import threading
import time
import types

import numpy as np

from .. import dtypes as dt
from ..errors import GraphError
from ..passes.memory import MemoryPlan
from ..passes.schedule import schedule
from . import cache, dynamic, host_pool, rebind
from .alias import Aliases
from .arena_pieces import nothing, pieces_of
from .checks import check_in_place, check_numerics
from .concrete import dims_in

_ALIGN = 64


class Specialized:
    """One signature's schedule, memory plan and generated program (thread-safe)."""

    def __init__(
        self, graph, feed_shapes, bindings, backend, checks=False, plan=True, numerics=False,
        generate=True, into=False, template=None, placed=(),
    ):  # fmt: skip
        self.graph = graph
        # `placed`: positions of feeds that live in the arena, written there by the caller
        # before the run (`function_on(pieces)`, at `placement(k)`): buffers from the start,
        # whose bytes later buffers reuse once their last reader ran.
        self.placed = {id(graph.inputs[k]) for k in placed}
        self.backend = backend
        self.checks = checks
        # `into`: the program takes the caller's output arrays (`O`) and writes its outputs
        # there: how a loop body writes each step's carry into a buffer it reuses.
        self.into = into
        # Every float value checked for NaN/Inf as it is made; a failed check must change
        # no Variable, so no update runs in place (they are committed after the run).
        self.numerics = numerics
        self.shapes, self.attrs = rebind.concrete(graph, feed_shapes, bindings, template)
        # values of a length the run binds (kiln/runtime/dynamic.py): fresh arrays, unplanned
        self.dynamic = {k for k, s in self.shapes.items() if any(type(d) is not int for d in s)}
        # `template`: a planned program of this graph at other dims (kiln/runtime/rebind.py):
        # its schedule is reused, and its generated code when the storage decisions agree.
        self.template = template  # NOTE: dropped after planning, so no chain of programs lives on
        self._layout(plan, template)
        self.template = None
        if not generate:  # the schedule and memory plan only (to compare plans)
            return
        if template is None or not rebind.adopt(self, template):
            self.source, self._code, self.lines = self._generate()
            if bindings:  # symbolic dims: a new binding rebinds this code (kiln/runtime/rebind.py)
                self.bound_names = rebind.bound_names(self.order, self.attrs, self._ns)
        self._local = threading.local()
        self.timings = collections.defaultdict(float)  # line of the program -> seconds

    # -- storage: which values own arena buffers, views, in-place reuse --------------------

    def _nbytes(self, sym) -> int:
        if self.dynamic and id(sym) in self.dynamic:
            return 0  # no buffer: a fresh array of the length the run gives
        return math.prod(self.shapes[id(sym)]) * sym.dtype.itemsize

    def _layout(self, plan: bool, template=None):
        g = self.graph
        nodes = g.nodes
        self.fetched = {id(s) for s in g.outputs}
        # Values handed out (outputs, update values) live in fresh arrays, never the arena.
        self.escaping = self.fetched | {id(s) for s in g.updates.values()}
        self.aliases = template.aliases if template is not None else Aliases(g)
        in_place = plan and not self.numerics
        self.gets = _planned_tuples(nodes)
        self.inplace, after = self._inplace_updates(nodes) if in_place else ({}, {})
        if self.dynamic:
            after = dynamic.binders_first(nodes, self.attrs, after, self.graph)
        if template is not None and rebind.same_schedule(self, template):
            self.order = template.order  # no sizes to schedule by: a new batch size's case
        elif plan:
            sizes = [0 if self._is_view(n) or "source" in n.op.tags or id(n) in self.inplace
                     else self._nbytes(n.out) + self._elements_nbytes(n)
                     for n in nodes]  # fmt: skip
            self.order = schedule(nodes, sizes, after)
        else:
            self.order = list(nodes)
        self._assign_storage(plan)
        self.pooled = self._pooled()

    def _pooled(self) -> dict:
        """{position in the order: (shape, dtype)} of the outputs whose memory comes from the
        pool of recycled host memory (kiln/runtime/host_pool.py): on the CPU, fetched values
        of a static shape of at least `OUTPUT_POOL_MIN_BYTES` that a kernel makes as fresh
        arrays (not views, sources, updates in place or tuples), handed out as they are. Their
        kernel is called with `out=` a pooled array, as a buffer's is with its arena view."""
        if self.backend.name != "cpu" or self.into:
            return {}
        least = max(cache.OUTPUT_POOL_MIN_BYTES, 1)
        pooled = {}
        for t, n in enumerate(self.order):
            out = n.out
            if (id(out) not in self.fetched or self.storage.get(id(out)) is not None
                    or "source" in n.op.tags or self._is_view(n) or id(n) in self.inplace
                    or out.dtype == dt.TUPLE or n.op.name == "get" or id(out) in self.gets
                    or id(out) in self.dynamic
                    or not host_pool.poolable(out.dtype) or self._nbytes(out) < least):  # fmt: skip
                continue
            pooled[t] = (tuple(self.shapes[id(out)]), out.dtype)
        return pooled

    def pool_makers(self) -> dict:
        """The namespace's `p{t}`: a call making output t's array from the pool."""
        return {f"p{t}": functools.partial(host_pool.array, math.prod(shape) * dtype.itemsize,
                                           shape, dtype)
                for t, (shape, dtype) in self.pooled.items()}  # fmt: skip

    def _is_view(self, node) -> bool:
        return bool(node.op.views)

    def _elements_nbytes(self, node) -> int:
        """The bytes of a planned tuple's elements (a fused node with several results)."""
        gets = self.gets.get(id(node.out))
        return sum(self._nbytes(g[0].out) for g in gets if g) if gets else 0

    def _inplace_updates(self, nodes) -> tuple[dict, dict]:
        """({id(update node): (Variable, its node)} for updates that write into the
        variable's storage, {node index: indices that must run before it}).

        An update runs in place only when its variable's storage is not read at the end (a
        fetched view of it, or another update's value), its node may write into that storage
        (`Aliases.may_write_into`), and it can run after every other reader of that storage
        and every op that may fail, so a failed run changes nothing. Updates are taken one
        by one; one whose ordering edges would close a cycle with those already taken (two
        updates that read each other's variables) is committed after the run instead.
        """
        g, aliases = self.graph, self.aliases
        index, var_node, users, shared, may_fail = rebind.update_structure(g, nodes)
        if self.dynamic:
            may_fail = [i for i, n in enumerate(nodes) if n.op.may_fail or id(n.out) in self.dynamic
                        or any(id(x) in self.dynamic for x in n.inputs)]  # fmt: skip
        users = [list(u) for u in users]
        inplace, after = {}, {}
        shape_of = lambda s: self.shapes[id(s)]  # noqa: E731
        for var, value in g.updates.items():
            node, vn = value.node, var_node.get(id(var))
            result = node.op.name == "get" and id(node.inputs[0]) in self.gets
            if vn is None or "source" in node.op.tags or (self._is_view(node) and not result):
                continue
            if id(value) in self.fetched or aliases.read_at_end(vn.out) or shared[id(value)] > 1:
                continue
            if self.shapes[id(value)] != var.shape or value.dtype != var.dtype:
                continue
            if result:  # a result of a fused node: that node writes into the variable
                if len(self.gets[id(node.inputs[0])][node.attrs["index"]]) > 1:
                    continue
                writer = node.inputs[0].node
                if not self._may_write_result(writer, node.attrs["index"], vn.out):
                    continue
            else:
                writer = node
                if not aliases.may_write_into(node, vn.out, shape_of):
                    continue
            i = index[id(writer)]
            readers = {index[id(u)] for u in aliases.readers_of(vn.out)} - {i}
            blockers = readers | set(may_fail)
            if _reaches_any(i, blockers, users):
                continue  # it would have to run both before and after one of them
            for b in blockers:
                users[b].append(i)
            inplace[id(node)] = (var, vn)
            after[i] = after.get(i, set()) | blockers  # a fused node may write several
        return inplace, after

    def _may_write_result(self, n, r, target) -> bool:
        """Whether result `r` of fused node `n` may be written into `target`'s storage while
        `n` runs: each input of `n` in that storage is `target` itself, of the iteration
        shape (read at the index written, never broadcast), and read by no equation after
        result r's (the blocked and whole-array paths write r before the later equations)."""
        from ..ops.fused import compiled

        prog = compiled(n.attrs["program"], n.attrs["outputs"])
        j = prog.outputs[r]
        value = self.gets[id(n.out)][r][0].out
        for p, i in enumerate(n.inputs):
            if not self.aliases.same(i, target):
                continue
            if i is not target or self.shapes[id(i)] != self.shapes[id(value)]:
                return False
            if any(p in slots for slots in prog.slots[j + 1 :]):
                return False
        return True

    def _assign_storage(self, plan: bool):
        """Buffers, their lifetimes over the schedule, in-place reuse, and arena offsets."""
        kept = rebind.kept_storage(self, plan)  # a template's, where nothing can differ
        if kept is None:
            self.storage, owners = self._owners(plan)
            last = self._last_uses(owners)
            rebind.keep_storage(self, plan, owners, last)
        else:
            self.storage, owners, last = kept
        self.owned = dict(self.storage)  # before in-place reuse: which values own buffers
        self.floor_bytes = floor = self._floor(owners)  # uncapped, for tests
        if plan:
            self._merge_in_place(owners, last)
        keys = sorted({k for k in self.storage.values() if k is not None})
        renumber = {k: j for j, k in enumerate(keys)}
        self.storage = {v: (None if k is None else renumber[k]) for v, k in self.storage.items()}
        starts = [owners[k][1] for k in keys]
        self.plan = MemoryPlan.build(
            [self._nbytes(owners[k][0]) for k in keys], starts, [last[k] for k in keys],
            [owners[k][0].name for k in keys], [owners[k][2] for k in keys], alignment=_ALIGN,
            floor=floor,
        )  # fmt: skip
        self.frees = {}
        for j, k in enumerate(keys):
            self.frees.setdefault(last[k], []).append(j)
        self._buffer_syms = {j: owners[k][0] for j, k in enumerate(keys)}
        placed = {renumber[k] for k in self.placed_keys}  # never merged away: inputs' own
        self.pieces = pieces_of(self.plan, placed) if self.placed and plan else None

    def _floor(self, owners) -> int:
        """A lower bound on the arena of every order: while a node X runs, every buffer made
        by X or before it (its ancestors) and read by X or after it (its descendants) is
        live; that holds in any topological order. X's result may take an input's buffer
        only when X is elementwise and of that input's size, so it is then not counted. Over
        `_CUT_LIMIT` nodes only X's own inputs and result are counted (a weaker bound)."""
        nodes, storage = self.order, self.storage
        size = {k: self._nbytes(v) for k, (v, *_rest) in owners.items()}
        ins = [{storage[id(i)] for i in n.inputs} - {None} for n in nodes]
        result, merged = [], []  # X's own buffer's bytes; those when it may take an input's
        for n, keys in zip(nodes, ins):
            k = storage[id(n.out)]
            b = size[k] if k is not None and k not in keys and k in size else 0
            result.append(b)
            same = b and "elementwise" in n.op.tags and b in {size[j] for j in keys}
            merged.append(b if same else 0)
        if len(nodes) > _CUT_LIMIT:
            totals = (sum(size[k] for k in keys) + b - m for keys, b, m in zip(ins, result, merged))
            return max(totals, default=0)
        crossing = rebind.crossing(self, owners)  # a template's, when its order is reused
        if crossing is not None:
            self.crossing_rows = crossing
            totals = _crossing_totals([size[k] for k in owners], crossing, len(nodes))
            return int(max((c - m for c, m in zip(totals.tolist(), merged)), default=0))
        index = {id(n): t for t, n in enumerate(nodes)}
        readers: dict[int, list] = {}
        for t, keys in enumerate(ins):
            for k in keys:
                readers.setdefault(k, []).append(t)
        anc, desc = _closures(nodes, index)
        # Row k: the nodes buffer k crosses (made by X or before, read by X or after); kept
        # packed, so a program reusing this order sums them with its own sizes.
        rows = np.zeros((len(owners), (len(nodes) + 7) // 8), np.uint8)
        for j, (k, (v, *_rest)) in enumerate(owners.items()):
            m = index[id(v.node)]
            reach = 1 << m  # the nodes that run while a reader of k is still to run
            for r in readers.get(k, ()):
                reach |= anc[r] | (1 << r)
            mask = (desc[m] | (1 << m)) & reach
            rows[j] = np.frombuffer(mask.to_bytes(rows.shape[1], "little"), np.uint8)
        self.crossing_rows = rows
        crossing = _crossing_totals([size[k] for k in owners], rows, len(nodes))
        return int(max((c - m for c, m in zip(crossing.tolist(), merged)), default=0))

    def _owners(self, plan: bool):
        """Which storage each value lives in: a buffer of its own, its base's (views), or
        outside the arena (None: sources, outputs, in-place updates)."""
        storage, owners, contiguous = {}, {}, {}
        self.placed_keys = set()
        for t, n in enumerate(self.order):
            out = n.out
            contiguous[id(out)] = True
            if id(out) in self.placed and plan and self._nbytes(out):
                storage[id(out)] = len(owners)
                self.placed_keys.add(len(owners))
                owners[len(owners)] = [out, 0, "placed feed"]  # live from the start
            elif "source" in n.op.tags or id(n) in self.inplace:
                storage[id(out)] = None
            elif n.op.name == "get" and id(n.inputs[0]) in self.gets:
                pass  # storage set with its tuple's node (an element's buffer, or None)
            elif self._is_view(n) and (
                n.op.name != "reshape" or contiguous[id(n.inputs[0])] or id(out) in self.escaping
            ):
                # NOTE: a reshape of a non-contiguous value copies into a buffer of its own
                # when it has one; an escaping one has none, and NumPy may still return a view
                # (dropping a size-1 dim of a slice), so it counts as a view of its base.
                base = n.inputs[0]
                keep = n.op.name in ("reshape", "stop_gradient")
                contiguous[id(out)] = keep and contiguous[id(base)]
                storage[id(out)] = storage[id(base)]
            elif id(out) in self.gets:  # a tuple of results, one buffer each (`_planned_tuples`)
                storage[id(out)] = None
                for gets in self.gets[id(out)]:
                    value = gets[0].out if gets else None
                    fresh = (value is None or not plan or self._nbytes(value) == 0
                             or any(id(g.out) in self.escaping for g in gets))  # fmt: skip
                    for g in gets:
                        storage[id(g.out)] = None if fresh else len(owners)
                    if not fresh:
                        owners[len(owners)] = [value, t, "buffer (a result of a tuple)"]
            elif id(out) in self.escaping or not plan or self._nbytes(out) == 0:
                storage[id(out)] = None  # a fresh array (an output) or nothing to store
            else:
                storage[id(out)] = len(owners)
                owners[len(owners)] = [out, t, "buffer"]
        return storage, owners

    def _last_uses(self, owners) -> dict:
        last = {k: owners[k][1] for k in owners}
        end = len(self.order)
        for t, n in enumerate(self.order):
            for i in n.inputs:
                k = self.storage[id(i)]
                if k is not None:
                    last[k] = max(last[k], t)
        # With placed feeds (a run's own arena, in pieces) a fetched view of a buffer is
        # copied where it is made, so its buffer's piece can go before the end.
        counts = collections.Counter(id(s) for s in self.graph.outputs)
        self.early_copies = {id(s) for s in self.graph.outputs if self.placed and counts[id(s)] == 1
                             and self._is_view(s.node) and id(s) not in self.placed}  # fmt: skip
        position = {id(n.out): t for t, n in enumerate(self.order)}
        for s in (*self.graph.outputs, *self.graph.updates.values()):
            k = self.storage[id(s)]
            if k is not None and id(s) in self.early_copies:
                last[k] = max(last[k], position[id(s)])
            elif k is not None:  # a fetched view of a buffer is copied at the very end
                last[k] = end
        return last

    def _merge_in_place(self, owners, last):
        """An elementwise node writes into an input's buffer when that input is the buffer's
        own value (not a view of it), dies at this node, and has the same shape and dtype:
        never a partial overlap between an op's input and output."""
        merged = {}
        shape_of = lambda s: self.shapes[id(s)]  # noqa: E731

        def find(k):
            while k in merged:
                k = merged[k]
            return k

        for t, n in enumerate(self.order):
            if id(n.out) in self.gets:
                self._merge_results(n, t, owners, last, merged, find)
                continue
            k_out = self.storage[id(n.out)]
            if (k_out is None or owners[k_out][0] is not n.out or "elementwise" not in n.op.tags
                    or "no_inplace" in n.op.tags):  # fmt: skip
                continue
            for i in n.inputs:
                k = self.storage[id(i)]
                k = None if k is None else find(k)
                if (k is not None and owners[k][0] is i and last[k] == t and i.dtype == n.out.dtype
                        and self.aliases.may_write_into(n, i, shape_of)):  # fmt: skip
                    merged[k_out] = k
                    last[k] = last[k_out]
                    owners[k][2] += f", then {n.name} in place"
                    owners[k][0] = n.out  # the buffer's value is now the output
                    break
        self.storage = {v: (None if k is None else find(k)) for v, k in self.storage.items()}

    def _merge_results(self, n, t, owners, last, merged, find):
        """`_merge_in_place` for a fused node with several results: result r may take the
        buffer of input i where i is that buffer's own value, dies at this node, has r's
        dtype and the iteration shape (no broadcast: every element of the loop reads i at
        the index it writes), is read by no equation after r's (the blocked and whole-array
        paths write r before they run the later equations), and no other input is a view of
        it; each input goes to one result at most."""
        for r, gets in enumerate(self.gets[id(n.out)]):
            k_out = self.storage[id(gets[0].out)] if gets else None
            if k_out is None or owners[k_out][0] is not gets[0].out:
                continue
            value = gets[0].out
            for i in n.inputs:
                k = self.storage[id(i)]
                k = None if k is None else find(k)
                if not (
                    k is not None
                    and owners[k][0] is i
                    and last[k] == t
                    and i.dtype == value.dtype
                    and self._may_write_result(n, r, i)
                ):
                    continue
                merged[k_out] = k
                last[k] = last[k_out]
                owners[k][2] += f", then {value.name} in place"
                owners[k][0] = value
                break

    # -- code ------------------------------------------------------------------------------

    def _generate(self):
        g = self.graph
        names = _Names(self.order, {id(s) for s in (*g.outputs, *g.updates.values())})
        ns = {"xp": self.backend.xp, "nan": float("nan"), "check_numerics": check_numerics,
              "check_in_place": check_in_place, **self.pool_makers()}  # fmt: skip
        inputs = {id(s): k for k, s in enumerate(g.inputs)}
        var_index = {}
        lines, line_nodes = [f"def program(X, V, K{', O' if self.into else ''}):"], {}
        if self.dynamic:
            ns["dims"], ns["bind_dims"] = dynamic.dims, dynamic.bind
            ns["infer_dims"] = dynamic.infer
            lines.append("    D = {}")  # the dims this run binds
        pieces_made, pieces_freed = {}, {}
        for p, piece in enumerate(self.pieces or ()):
            if not piece.placed:  # the caller made those holding placed feeds
                pieces_made.setdefault(piece.first, []).append(p)
            pieces_freed.setdefault(piece.last, []).append(p)
        ns["make"] = ns["free"] = nothing  # a program bound to a whole arena
        self.slots = {}  # into: id(output) -> where in O a kernel writes it (first one)
        if self.into:
            for k, s in enumerate(g.outputs):
                self.slots.setdefault(id(s), k)
        self.written = {}
        self.variables = []  # V's order: the Variables the program reads or writes
        rand = 0
        for t, n in enumerate(self.order):
            lines += [f"    make({p})" for p in pieces_made.get(t, ())]
            if n.op.name == "constant":  # bound in the namespace: no line
                ns[f"c{t}"] = self.backend.to_device(n.attrs["value"].array)
                names.bind(n.out, f"c{t}")
                continue
            if self.dynamic and dynamic.inferred(n, [self.shapes[id(i)] for i in n.inputs],
                                                 self.attrs[id(n)]):  # fmt: skip
                # sizes the run bound: the op's rules on them bind its result's, or refuse
                ns[f"n{t}"], ns[f"s{t}"], ns[f"r{t}"] = n, self.shapes[id(n.out)], self.attrs[id(n)]
                operands = "".join(f"{names[id(i)]}, " for i in n.inputs)
                lines.append(f"    infer_dims(n{t}, ({operands}), r{t}, s{t}, D)")
            v = names.define(n.out)
            if id(n.out) in inputs:  # X lets go: a feed handed over is freed after its last read
                code = f"{v} = X[{inputs[id(n.out)]}]; X[{inputs[id(n.out)]}] = None"
            elif n.op.name == "variable":
                code = f"{v} = V[{self._var_slot(n.ref, var_index)}]"
            else:
                code = self._call(n, t, v, names, ns, var_index, rand)
                rand += "random" in n.op.tags
            dead = names.release(n, t)
            lines.append(f"    {code}")
            line_nodes[len(lines)] = n
            if id(n.out) in self.dynamic:  # binds its dims the run gives, checks the others
                ns[f"n{t}"], ns[f"s{t}"] = n, self.shapes[id(n.out)]
                lines.append(f"    bind_dims({v}, s{t}, D, n{t})")
            if id(n.out) in self.early_copies and self.storage.get(id(n.out)) is not None:
                lines.append(f"    {v} = {v}.copy()")
            if self.numerics and (dt.is_float(n.out.dtype) or n.out.dtype.kind == "c"):
                ns[f"n{t}"] = n
                lines.append(f"    check_numerics({v}, n{t})")
            if self.checks:
                lines += self._poison(t)
            if self.pieces is None:
                lines += [f"    {name} = None" for sym, name in dead if id(sym) in inputs]
            else:  # a run's own arena, in pieces: made at first use, freed after the last
                lines += [f"    {name} = None" for sym, name in dead]
                lines += [f"    free({p})" for p in pieces_freed.get(t, ())]
        if self.into:  # outputs no kernel wrote into O (inputs, views, constants) are copied
            lines += [f"    xp.copyto(O[{k}], {names[id(s)]})" for k, s in enumerate(g.outputs)
                      if self.written.get(id(s)) != k]  # fmt: skip
            lines.append("    return O, []")
            self.update_vars, self.random_nodes = [], [n for n in self.order
                                                       if "random" in n.op.tags]  # fmt: skip
            self._ns = ns
            source = "\n".join(lines) + "\n"
            return source, compile(source, f"<kiln program {id(self):x}>", "exec"), line_nodes
        # NOTE: an array handed out twice (fetched and committed, committed to two Variables,
        # or fetched twice: two fetches that passes merged into one value, `y1 = a + b;
        # y2 = a + b`) is copied, so no two Variables and no two outputs share storage, as in
        # the unplanned program.
        handed: set = set()
        outs = []
        for s in g.outputs:
            outs.append(self._fetch(s, names, copy=id(s) in handed))
            handed.add(id(s))
        ups = []
        for s in g.updates.values():
            if id(s.node) not in self.inplace:
                ups.append(self._fetch(s, names, copy=id(s) in handed))
                handed.add(id(s))
        lines.append(f"    return [{', '.join(outs)}], [{', '.join(ups)}]")
        self.update_vars = [var for var, s in g.updates.items() if id(s.node) not in self.inplace]
        self.random_nodes = [n for n in self.order if "random" in n.op.tags]
        source = "\n".join(lines) + "\n"
        self._ns = ns
        return source, compile(source, f"<kiln program {id(self):x}>", "exec"), line_nodes

    def _var_slot(self, var, var_index) -> int:
        if id(var) not in var_index:
            var_index[id(var)] = len(self.variables)
            self.variables.append(var)
        return var_index[id(var)]

    def _poison(self, t) -> list:
        out = []
        for k in self.frees.get(t, ()):
            out.append(f"    b{k}.fill(nan) if b{k}.dtype.kind == 'f' else b{k}.fill(-1)")
        return out

    def _call(self, n, t, v, names, ns, var_index, rand) -> str:
        args = [names[id(i)] for i in n.inputs]
        kernel = None
        unplanned = id(n.out) in self.dynamic or any(id(i) in self.dynamic for i in n.inputs)
        if n.op.prepare is not None and not unplanned:  # for this signature, its attrs bound
            kernel = n.op.prepare(
                self.backend, [self.shapes[id(i)] for i in n.inputs], [i.dtype for i in n.inputs],
                self.shapes[id(n.out)], **self.attrs[id(n)],
            )  # fmt: skip
        ns[f"k{t}"] = kernel or n.op.impl
        kwargs = []
        for key, value in self.attrs[id(n)].items() if kernel is None else ():
            ns[f"a{t}_{key}"] = value
            if unplanned and next(dims_in(value), None) is not None:
                kwargs.append(f"{key}=dims(a{t}_{key}, D)")  # dims the run bound
                continue
            kwargs.append(f"{key}=a{t}_{key}")
        if "random" in n.op.tags:
            kwargs.append(f"key=K[{rand}]")
        call = f"k{t}(xp, {', '.join([*args, *kwargs])}"
        in_place = id(n) in self.inplace
        if n.op.name == "get" and id(n.inputs[0]) in self.gets:
            in_place = False  # the element its tuple's kernel wrote (in a Variable, maybe)
        elif in_place:
            var = self.inplace[id(n)][0]
            kwargs.append(f"out=V[{self._var_slot(var, var_index)}]")
        elif id(n.out) in self.gets:  # one buffer per result, None where it is a fresh array
            outs, ins = [], {self.storage.get(id(i)) for i in n.inputs}
            for gets in self.gets[id(n.out)]:
                k = self.storage[id(gets[0].out)] if gets else None
                if gets and id(gets[0]) in self.inplace:  # a Variable updated in place
                    var = self.inplace[id(gets[0])][0]
                    outs.append(f"V[{self._var_slot(var, var_index)}]")
                    in_place = True
                else:
                    outs.append("None" if k is None else f"b{k}")
                    in_place = in_place or (k is not None and k in ins)
            if any(o != "None" for o in outs):
                kwargs.append(f"out=({''.join(o + ', ' for o in outs)})")
        else:
            key = self.storage.get(id(n.out))
            if key is not None and not (self._is_view(n) and n.inputs and
                                        self.storage.get(id(n.inputs[0])) == key):  # fmt: skip
                kwargs.append(f"out=b{key}")
                in_place = any(self.storage.get(id(i)) == key for i in n.inputs)
            elif key is None and id(n.out) in self.slots and not self._is_view(n):
                self.written[id(n.out)] = self.slots[id(n.out)]
                kwargs.append(f"out=O[{self.slots[id(n.out)]}]")
            elif key is None and t in self.pooled:  # an output's memory, recycled
                kwargs.append(f"out=p{t}()")
        method = n.op.method  # (kiln/graph/opdef.py)
        if method is not None and kernel is None and kwargs == [f"{method[1]}=a{t}_{method[1]}"]:
            # a view made by the array's own method: the kernel's call and its NumPy
            # function's dispatch cost about 1 us, the method a fifth of that
            return f"{v} = {args[0]}.{method[0]}(a{t}_{method[1]})"
        code = f"{v} = k{t}(xp, {', '.join([*args, *kwargs])})"
        if self.checks and in_place:  # KILN_CHECKS=1: the same kernel out of place must agree
            ns[f"n{t}"] = n
            return f"r = {call}); {code}; check_in_place(xp, {v}, r, n{t}); del r"
        return code

    def _fetch(self, s, names, copy: bool = False) -> str:
        n = s.node
        fresh = not ("source" in n.op.tags or self._is_view(n) or id(n) in self.inplace)
        if n.op.name == "get" and id(n.inputs[0]) in self.gets:  # its own array, unless shared
            fresh = len(self.gets[id(n.inputs[0])][n.attrs["index"]]) == 1
        fresh = fresh and self.storage.get(id(s)) is None and not copy
        copied = id(s) in self.early_copies and self.storage.get(id(s)) is not None
        return names[id(s)] if fresh or copied else f"{names[id(s)]}.copy()"

    # -- running ---------------------------------------------------------------------------

    def placement(self, k) -> int | None:
        """The arena offset of placed feed `k` (None: it has no buffer, it is not read)."""
        key = self.storage.get(id(self.graph.inputs[k]))
        return None if key is None else self.plan.offsets[key]

    def piece_of(self, offset) -> int:
        """The piece of the arena (`pieces`) that holds the bytes at `offset`."""
        return next(p for p, piece in enumerate(self.pieces) if piece.lo <= offset < piece.hi)

    def function_on(self, pieces: list):
        """One run's program, on an arena of its own in pieces (`self.pieces`): `pieces`
        holds the device bytes of those with placed feeds (the caller wrote them at their
        `placement`; None for the others) and is emptied, the program taking them over: it
        makes each other piece before its first buffer is written and lets go of each piece
        after its last buffer is read, so the arena is never whole at once."""
        if self.pieces is None or len(pieces) != len(self.pieces):
            raise GraphError("an arena in pieces for a program without placed feeds, or in "
                             "other pieces than its plan's")  # fmt: skip
        for piece, given in zip(self.pieces, pieces):
            wanted = piece.hi - piece.lo
            if piece.placed and (given is None or given.nbytes != wanted):
                raise GraphError(f"an arena piece of {wanted} B holding placed feeds was not "
                                 "given")  # fmt: skip
        code = getattr(self, "_program_code", None)
        if code is None:
            module = {}
            exec(self._code, dict(self._ns), module)
            code = self._program_code = module["program"].__code__
        ns = dict(self._ns)
        plan, backend = self.plan, self.backend

        def make(p, data=None):
            piece = self.pieces[p]
            if data is None:
                data = backend.empty((piece.hi - piece.lo,), np.uint8)
            for k in piece.buffers:
                start = plan.offsets[k] - piece.lo
                sym = self._buffer_symbol(k)
                view = data[start : start + plan.sizes[k]].view(sym.dtype)
                ns[f"b{k}"] = view.reshape(self.shapes[id(sym)])

        def free(p):
            for k in self.pieces[p].buffers:
                del ns[f"b{k}"]

        for p, data in enumerate(pieces):
            if data is not None:
                make(p, data)
        pieces.clear()
        ns["make"], ns["free"] = make, free
        return types.FunctionType(code, ns)

    def function(self, profiled: bool = False):
        """This thread's program, bound to this thread's arena (`profiled`: the variant that
        adds each node's time to `PROFILE[node's line]`)."""
        attr = "profiled_fn" if profiled else "fn"
        fn = getattr(self._local, attr, None)
        if fn is None:
            if not hasattr(self._local, "buffers"):
                self._local.buffers = self._buffers()
            ns = {**self._ns, **self._local.buffers}
            code = self._code
            if profiled:
                ns["clock"], ns["PROFILE"] = time.perf_counter, self.timings
                ns["sync"] = self.backend.synchronize
                code = compile(self._profiled_source(), self._code.co_filename, "exec")
            module = {}
            exec(code, ns, module)  # defines program(); its globals are this namespace
            fn = types.FunctionType(module["program"].__code__, ns)
            setattr(self._local, attr, fn)
        return fn

    def _buffers(self) -> dict:
        arena = self.backend.empty((max(self.plan.arena_bytes, 1),), np.uint8)
        views = {}
        for k, (offset, size) in enumerate(zip(self.plan.offsets, self.plan.sizes)):
            sym = self._buffer_symbol(k)
            view = arena[offset : offset + size].view(sym.dtype)
            views[f"b{k}"] = view.reshape(self.shapes[id(sym)])
        return views

    def _profiled_source(self) -> str:
        """The program with a clock reading around each node's line (same line numbers); on a
        GPU, where kernels run asynchronously, each line also waits for its kernels."""
        lines = self.source.splitlines()
        sync = "" if self.backend.name == "cpu" else " sync();"
        for lineno in self.lines:
            code = lines[lineno - 1].strip()
            lines[lineno - 1] = f"    t = clock(); {code};{sync} PROFILE[{lineno}] += clock() - t"
        return "\n".join(lines) + "\n"

    def profile(self) -> list:
        """(node, seconds, output bytes) of each node, from the profiled runs so far."""
        return [(n, self.timings.get(line, 0.0), self._nbytes(n.out))
                for line, n in sorted(self.lines.items())]  # fmt: skip

    def _buffer_symbol(self, key):
        return self._buffer_syms[key]

    def failing_node(self, tb):
        """The node whose line of the generated program raised, from a traceback."""
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self._code.co_filename:
                return self.lines.get(tb.tb_lineno)
            tb = tb.tb_next
        return None


class _Names:
    """Local names of the generated program, recycled once a value is dead: a program of
    20,000 nodes then has as many locals as values live at once (Python compiles it faster)."""

    def __init__(self, order, kept):
        self.last = {}
        for t, n in enumerate(order):
            for i in n.inputs:
                self.last[id(i)] = t
        self.kept = kept  # outputs and update values: alive until the return
        self.names: dict[int, str] = {}
        self.free: list[str] = []
        self.count = 0

    def __getitem__(self, key) -> str:
        return self.names[key]

    def bind(self, sym, name: str) -> None:
        self.names[id(sym)] = name

    def define(self, sym) -> str:
        if self.free:
            name = self.free.pop()
        else:
            name, self.count = f"v{self.count}", self.count + 1
        self.names[id(sym)] = name
        return name

    def release(self, node, t) -> list:
        """Frees the names of the node's inputs (and its own value, if unused) dead after t;
        returns them as (value, name)."""
        dead = []
        for sym in {id(i): i for i in (*node.inputs, node.out)}.values():
            name = self.names.get(id(sym), "")
            if (name.startswith("v") and id(sym) not in self.kept
                    and self.last.get(id(sym), t) <= t):  # fmt: skip
                self.free.append(name)
                self.names[id(sym)] = "<dead>"
                dead.append((sym, name))
        return dead


def _planned_tuples(nodes) -> dict:
    """id(tuple value) -> per result, the `get` nodes that read it, for each node whose kernel
    writes a tuple of results into planned buffers (`out=` a tuple): a fused node with
    several results (kiln/ops/fused.py). Other tuples (region ops, sort...) are fresh arrays."""
    from .. import dtypes as dt

    found = {id(n.out): [[] for _ in n.attrs["outputs"]] for n in nodes
             if n.op.name == "fused" and n.out.dtype == dt.TUPLE}  # fmt: skip
    for n in nodes:
        if n.op.name == "get" and id(n.inputs[0]) in found:
            found[id(n.inputs[0])][n.attrs["index"]].append(n)
    return found


_CUT_LIMIT = 4000  # nodes: up to here `_floor` counts what must cross each node (O(n^2) bits)


def _closures(nodes, index) -> tuple[list, list]:
    """Each node's ancestors and descendants (by position in `nodes`) as int bitsets."""
    deps = [[index[id(i.node)] for i in n.inputs if id(i.node) in index] for n in nodes]
    anc = [0] * len(nodes)
    for t, d in enumerate(deps):
        for j in d:
            anc[t] |= anc[j] | (1 << j)
    desc = [0] * len(nodes)
    for t in range(len(nodes) - 1, -1, -1):
        for j in deps[t]:
            desc[j] |= desc[t] | (1 << t)
    return anc, desc


def _crossing_totals(sizes, rows, n: int) -> np.ndarray:
    """Per node, the bytes of the buffers crossing it: `sizes` weighted by the packed bit
    rows (one per buffer), unpacked a block of rows at a time (a few MiB at most)."""
    totals = np.zeros(n, np.int64)
    sizes = np.asarray(sizes, np.int64)
    step = max(1, (1 << 19) // max(n, 1))
    for start in range(0, len(sizes), step):
        bits = np.unpackbits(rows[start : start + step], axis=1, count=n, bitorder="little")
        totals += sizes[start : start + step] @ bits.astype(np.int64)
    return totals


def _reaches_any(src: int, targets: set, users: list) -> bool:
    """Whether any of `targets` is reachable from node `src` along `users` (data and
    ordering edges)."""
    if not targets:
        return False
    stack, seen = [src], {src}
    while stack:
        i = stack.pop()
        if i in targets:
            return True
        for u in users[i]:
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return False
