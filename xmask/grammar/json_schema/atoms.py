"""Schema locations as sets of *atoms*, and the synthetic schemas the converter derives.

A location's atoms are the own keywords of each schema object applying there (``("own",
node)``; ``allOf`` and ``$ref`` are followed in place) plus one atom per disjunctive keyword
(``("anyOf", node)``, ``("oneOf", node)``, ``("not", node)``, ``("if", node)``, ``("dep",
node, keyword, name)``), a synthetic disjunction ``("alt", i)`` or the ``("chose", node,
branch)`` marker of a distributed branch (see :mod:`.unevaluated`).  ``FALSE`` alone stands
for an unsatisfiable location.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"allOf": [{"type": "string"}], "not": {"const": ""}}, Layout())
    >>> sorted(a[0] for a in conv.atoms.flatten(conv.doc.nid(conv.doc.root)))
    ['not', 'own']
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Optional

from ...errors import UnsupportedSchemaError
from .context import Context
from .unevaluated import has_unevaluated
from .vocabulary import FALSE, OWN_KEYWORDS

__all__ = ["AtomTable"]

# keywords that add atoms other than ("own", node) or apply other schemas in place
_IN_PLACE = frozenset(("$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if",
                       "dependentRequired", "dependentSchemas", "dependencies"))


class AtomTable:
    """Atom sets of schema nodes (memoized), synthetic schemas and synthetic disjunctions."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.doc = ctx.doc
        self.flat_memo: Dict[int, FrozenSet] = {}
        self.synth_memo: Dict[Any, int] = {}
        self.synth_alts: List[List[FrozenSet]] = []  # the alternatives of ("alt", i)
        self.order: Dict[int, int] = {}  # node -> first visit (depth-first): merge order
        self.origin = "#"  # pointer reported for derived (synthetic) schemas

    def flatten(self, nid: int) -> FrozenSet:
        """The atoms of the schema ``nid`` (``allOf`` and ``$ref`` followed in place)."""
        hit = self.flat_memo.get(nid)
        if hit is not None:
            return hit
        atoms = set()
        seen = {nid}
        stack = [nid]
        doc = self.doc
        while stack:
            n = stack.pop()
            if n not in self.order:
                self.order[n] = len(self.order)  # first visit, depth-first: merge order
            obj, base, p = doc.nodes[n]
            if obj is True:
                continue
            if obj is False:
                atoms.add(FALSE)
                continue
            if _IN_PLACE.isdisjoint(obj):  # the usual node: its own keywords only
                if not OWN_KEYWORDS.isdisjoint(obj):
                    atoms.add(("own", n))
                continue
            nexts: List[int] = []  # subschemas applying in place, in document order
            ref = obj.get("$ref")
            if isinstance(ref, str):
                try:
                    t = doc.resolve(ref, base, f"{p}/$ref")
                except UnsupportedSchemaError as e:
                    self.ctx.unsupported(str(e.args[0]).split(" (at ")[0], e.path)
                    t = None
                if t is not None:
                    nexts.append(t)
                if doc.draft <= 7:
                    for t in reversed(nexts):
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                    continue  # siblings of $ref are ignored before 2019-09
            for k in ("$dynamicRef", "$recursiveRef"):
                if k in obj:
                    self.ctx.unsupported(f"{k} is not supported", f"{p}/{k}")
            if not OWN_KEYWORDS.isdisjoint(obj):
                atoms.add(("own", n))
            sub = obj.get("allOf")
            if isinstance(sub, list):
                for i, s in enumerate(sub):
                    nexts.append(doc.nid(s, base, f"{p}/allOf/{i}"))
            for t in reversed(nexts):
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
            for k in ("anyOf", "oneOf"):
                if isinstance(obj.get(k), list):
                    if not obj[k]:
                        raise UnsupportedSchemaError(f"{k} must not be empty", f"{p}/{k}")
                    atoms.add((k, n))
            if "not" in obj:
                atoms.add(("not", n))
            if "if" in obj and ("then" in obj or "else" in obj or has_unevaluated(self.doc, n)):
                # (an "if" alone constrains nothing, but its annotations reach unevaluated*)
                atoms.add(("if", n))
            for k in ("dependentRequired", "dependentSchemas", "dependencies"):
                v = obj.get(k)
                if isinstance(v, dict):
                    for name in v:
                        atoms.add(("dep", n, k, name))
        out = frozenset(atoms)
        if FALSE in out:
            out = frozenset((FALSE,))
        self.flat_memo[nid] = out
        return out

    def synth(self, key, obj) -> int:
        """The node of the synthetic schema ``obj`` (one per ``key``), reported at :attr:`origin`."""
        n = self.synth_memo.get(key)
        if n is None:
            n = self.synth_memo[key] = self.doc.synth(obj, self.origin)
        return n

    def synth_atoms(self, key, obj) -> FrozenSet:
        """The atoms of the synthetic schema ``obj`` (see :meth:`synth`)."""
        return self.flatten(self.synth(key, obj))

    def disjunction_atom(self, alternatives: List[FrozenSet]) -> tuple:
        """A synthetic ``("alt", i)`` atom: any one of ``alternatives`` holds."""
        self.synth_alts.append(alternatives)
        return ("alt", len(self.synth_alts) - 1)

    def disj_atoms(self, alternatives: Optional[List[FrozenSet]]) -> FrozenSet:
        """Atoms for a disjunction of ``alternatives`` (None: no constraint; one: itself)."""
        if alternatives is None:
            return frozenset()
        if len(alternatives) == 1:
            return alternatives[0]
        return frozenset((self.disjunction_atom(alternatives),))

    def some_nid(self, atoms) -> int:
        """A node of ``atoms`` to name in error messages (0, the root of ``true``, if none)."""
        for a in sorted(atoms, key=repr):
            if len(a) > 1 and isinstance(a[1], int) and a[0] != "alt":
                return a[1]
        return 0
