"""One alias analysis over a program graph: which values share storage (a storage class is a
value and every view of it, and all nodes of one Variable), who reads each class, and whether a
node may write its result into a class. In-place variable updates, in-place buffer reuse and
fused kernels all ask it; views come only from each op's declared `views`.
"""

from __future__ import annotations


class Aliases:
    """Storage classes of `graph`'s values, from the ops' declared views.

    A class's readers are the nodes that take any of its values as an input; fetched values
    and update values are read once more at the end of the program (they are copied or
    committed after every node has run).
    """

    def __init__(self, graph):
        self._parent: dict[int, int] = {}
        var_root: dict[int, int] = {}  # id(Variable) -> its first node's value
        for n in graph.nodes:
            key = id(n.out)
            self._parent[key] = key
            if n.op.name == "variable":  # NOTE: two nodes of one Variable share its storage
                self._union(key, var_root.setdefault(id(n.ref), key))
            for k in n.op.views:
                self._union(key, id(n.inputs[k]))
        self.readers: dict[int, list] = {}
        for n in graph.nodes:
            seen = set()
            for i in n.inputs:
                c = self.of(i)
                if c not in seen:
                    seen.add(c)
                    self.readers.setdefault(c, []).append(n)
        self._at_end = {self.of(s) for s in (*graph.outputs, *graph.updates.values())}

    def _find(self, key: int) -> int:
        parent = self._parent
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def _union(self, a: int, b: int) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[max(ra, rb)] = min(ra, rb)

    def of(self, sym) -> int:
        """The storage class of `sym` (a key: equal keys share storage)."""
        return self._find(id(sym))

    def same(self, a, b) -> bool:
        return self.of(a) == self.of(b)

    def readers_of(self, sym) -> list:
        """The nodes that read `sym`'s storage, through any view of it."""
        return self.readers.get(self.of(sym), [])

    def read_at_end(self, sym) -> bool:
        """Whether `sym`'s storage is read after the last node (a fetched or update value
        in its class)."""
        return self.of(sym) in self._at_end

    def may_write_into(self, node, target, shape_of) -> bool:
        """Whether `node` may write its result into `target`'s storage while it runs: each of
        its inputs in that class must be `target` itself with the result's shape (`shape_of`
        gives concrete shapes), read by an elementwise kernel that reads each element before
        writing it, or at a position the op declares it `overwrites` (its kernel handles `out`
        being that input); never another view of it (a transpose read while its base is
        overwritten)."""
        cls = self.of(target)
        for k, i in enumerate(node.inputs):
            if self.of(i) != cls:
                continue
            if i is not target:
                return False
            elementwise = "elementwise" in node.op.tags and "no_inplace" not in node.op.tags
            if not (elementwise or k in node.op.overwrites):
                return False
            if shape_of(i) != shape_of(node.out):
                return False
        return True
