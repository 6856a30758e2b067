"""Combinators: the alternatives of one disjunctive atom (``anyOf``, ``oneOf``, ``not``,
``if``/``then``/``else``, dependencies, synthetic disjunctions), which the converter distributes
(``A and (B or C)`` = ``(A and B) or (A and C)``).

``oneOf`` is exact when its branches are provably disjoint (:mod:`.disjointness`); otherwise
each branch is conjoined with the negation of the branches it overlaps (:mod:`.negation`).
With ``unevaluated*`` at the location each alternative records the branch it took.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"anyOf": [{"type": "string"}, {"type": "null"}]}, Layout())
    >>> (anyof,) = conv.atoms.flatten(conv.doc.nid(conv.doc.root))
    >>> [[conv.ctx.ptr(a[1]) for a in alt] for alt in conv.combinators.alternatives(anyof, frozenset())]
    [['#/anyOf/0'], ['#/anyOf/1']]
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Tuple

from ...errors import UnsupportedSchemaError
from .atoms import AtomTable
from .context import Context
from .disjointness import Disjointness
from .document import escape_pointer
from .negation import Negation
from .unevaluated import has_unevaluated
from .vocabulary import FALSE

__all__ = ["Combinators"]


class Combinators:
    """Alternatives of disjunctive atoms."""

    def __init__(self, ctx: Context, atoms: AtomTable, negation: Negation, disjointness: Disjointness):
        self.ctx = ctx
        self.doc = ctx.doc
        self.atoms = atoms
        self.negation = negation
        self.disjointness = disjointness

    def alternatives(self, d: tuple, rest: FrozenSet) -> List[FrozenSet]:
        """The atom sets, each ``rest`` plus one alternative of the disjunctive atom ``d``."""
        kind = d[0]
        if kind == "alt":
            return [rest | a for a in self.atoms.synth_alts[d[1]]]
        n = d[1]
        obj, base, p = self.doc.nodes[n]
        # with unevaluated* at this location, each alternative records the branch it took
        # (a "chose" marker), whose annotations then count as evaluated
        watch = any(a[0] == "own" and has_unevaluated(self.doc, a[1]) for a in rest)

        def mark(key) -> FrozenSet:
            return frozenset((("chose", n, key),)) if watch else frozenset()

        if kind == "anyOf":
            return [rest | self.atoms.flatten(self.doc.nid(s, base, f"{p}/anyOf/{i}")) | mark(i)
                    for i, s in enumerate(obj["anyOf"])]
        if kind == "oneOf":
            return [a | mark(i) for i, a in self.one_of(n, rest)]
        if kind == "not":
            sub = self.doc.nid(obj["not"], base, f"{p}/not")
            neg = self.negation.negate(sub)
            if neg is None:
                self.ctx.unsupported("this 'not' subschema cannot be negated exactly", f"{p}/not")
                return [rest]
            return [rest | a for a in neg]
        if kind == "if":
            cond = self.doc.nid(obj["if"], base, f"{p}/if")
            cond_atoms = self.atoms.flatten(cond)  # first: "if" members come before "then" members
            then = self.atoms.flatten(self.doc.nid(obj.get("then", True), base, f"{p}/then"))
            other = self.atoms.flatten(self.doc.nid(obj.get("else", True), base, f"{p}/else"))
            neg = self.negation.negate(cond)
            if neg is None and "then" not in obj and "else" not in obj:
                return [rest]  # only for unevaluated*: its annotations are then not counted
            if neg is None:
                self.ctx.unsupported("the 'if' subschema cannot be negated exactly",
                                     f"{p}/if", "loosened: then/else treated as anyOf")
                return [rest | then, rest | other]
            return [rest | cond_atoms | then | mark("then")] + [rest | a | other | mark("else") for a in neg]
        if kind == "dep":
            _, _, k, name = d
            val = obj[k][name]
            self.atoms.origin = f"{p}/{k}/{escape_pointer(name)}"
            absent = self.atoms.synth_atoms(("absent", name), {"properties": {name: False}})
            if isinstance(val, list):
                if not all(isinstance(x, str) for x in val):
                    raise UnsupportedSchemaError("dependency lists must contain strings",
                                                 f"{p}/{k}/{escape_pointer(name)}")
                req = self.atoms.synth_atoms(("required", (name,) + tuple(val)), {"required": [name] + list(val)})
                return [rest | absent, rest | req]
            if isinstance(val, (dict, bool)):
                req = self.atoms.synth_atoms(("required", (name,)), {"required": [name]})
                sub = self.atoms.flatten(self.doc.nid(val, base, f"{p}/{k}/{escape_pointer(name)}"))
                return [rest | absent, rest | req | sub | mark((k, name))]
            raise UnsupportedSchemaError("invalid dependency value", f"{p}/{k}/{escape_pointer(name)}")
        raise AssertionError(kind)

    def one_of(self, n: int, rest: FrozenSet) -> List[Tuple[int, FrozenSet]]:
        """(branch index, atoms) of the ``oneOf`` of node ``n``, each branch made exclusive."""
        obj, base, p = self.doc.nodes[n]
        subs = [self.doc.nid(s, base, f"{p}/oneOf/{i}") for i, s in enumerate(obj["oneOf"])]
        branches = [rest | self.atoms.flatten(s) for s in subs]
        live = [i for i, b in enumerate(branches) if FALSE not in b]
        conflicts: Dict[int, List[int]] = {i: [] for i in live}
        for x in range(len(live)):
            for y in range(x + 1, len(live)):
                i, j = live[x], live[y]
                if not self.disjointness.disjoint(branches[i], branches[j], 3):
                    conflicts[i].append(j)
                    conflicts[j].append(i)
        if not any(conflicts.values()):
            return [(i, branches[i]) for i in live]
        out = []
        for i in live:
            extra = set()
            for j in conflicts[i]:
                neg = self.negation.negate(subs[j])
                if neg is None:
                    self.ctx.unsupported("oneOf branches are not provably exclusive",
                                         f"{p}/oneOf", "loosened: treated as anyOf")
                    return [(k, branches[k]) for k in live]
                extra.add(self.atoms.disjunction_atom(neg))
            out.append((i, branches[i] | frozenset(extra)))
        return out
