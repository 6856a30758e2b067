"""Grammar pieces of one JSON Schema for formats that wrap JSON values in other syntax (the
XML argument styles of structural tags, :mod:`..xml_arguments`).

Example::

    >>> parts = SchemaParts({"type": "object", "properties": {"n": {"type": "integer"}}})
    >>> [name for name, _, _ in parts.object_view(parts.root).members]
    ['n']
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

from ...errors import GrammarLimitError, UnsupportedSchemaError
from ...limits import DEFAULT_LIMITS, CompileLimits
from ..code_point_dfa import Dfa, dfa_literals, dfa_product, dfa_with_length
from ..ir import Expr
from ..rule_sink import RuleSink
from .converter import Converter
from .document import load_schema
from .layout import Layout
from .strings import any_string_dfa
from .values import kind_of
from .vocabulary import ARR, FALSE, FRAC, INT, MAX_COUNT_BOUND, MAX_DISJUNCTION_NESTING, OBJ, STR

__all__ = ["SchemaParts", "ObjectView", "StringView"]


class ObjectView(NamedTuple):
    """The members of the objects at one schema location (see :meth:`SchemaParts.object_view`).

    ``members``: ``(name, value part, required)`` in declaration order; ``additional``: the
    value part of keys outside the declared names (None: no other key allowed);
    ``min_props`` / ``max_props``: the member count bounds (``max_props`` None: unbounded);
    ``pointer``: the schema location; ``additional_declared``: an ``additionalProperties``
    keyword applies (else other keys are allowed only because nothing forbids them).
    """

    members: list
    additional: Optional[FrozenSet]
    min_props: int
    max_props: Optional[int]
    pointer: str
    additional_declared: bool


class StringView(NamedTuple):
    """The strings allowed at one schema location (see :meth:`SchemaParts.string_view`).

    ``dfa``: an automaton over the decoded code points (None: any string); ``plain``: no
    constraint at all (no enum, length, pattern or format); ``filtered``: the string is
    subject to ``excludes`` (it has no pattern or format).
    """

    dfa: Optional[Dfa]
    plain: bool
    filtered: bool


class SchemaParts:
    """Grammar pieces of one JSON Schema, for formats that wrap JSON values in other syntax
    (the XML argument styles of structural tags, :mod:`.xml_arguments`).

    A *part* is an opaque schema location (start with :attr:`root`).  :meth:`branches`
    distributes its disjunctions, :meth:`object_view` lists an object's members,
    :meth:`value` gives the rule of its JSON values of some kinds, :meth:`string_view` its
    strings as an automaton over decoded characters.  Every rule goes into one table
    (:meth:`fresh` / :meth:`define` add the caller's own), which :meth:`rules` returns.

    Example::

        >>> parts = SchemaParts({"type": "object", "properties": {"n": {"type": "integer"}}})
        >>> view = parts.object_view(parts.root)
        >>> [(name, required) for name, _, required in view.members]
        [('n', False)]
    """

    def __init__(self, schema, *, any_whitespace: bool = True, max_whitespace_cnt: Optional[int] = None,
                 strict_mode: bool = True, any_order: bool = False, excludes: Sequence[str] = (),
                 lenient: bool = False, limits: Optional[CompileLimits] = None):
        schema = load_schema(schema)
        self._c = Converter(schema, Layout(any_whitespace, None, None, max_whitespace_cnt),
                            strict_mode=strict_mode, lenient=lenient, any_order=any_order,
                            limits=DEFAULT_LIMITS if limits is None else limits, excludes=excludes)
        c = self._c
        self.root: FrozenSet = c.atoms.flatten(c.ctx.doc.nid(c.ctx.doc.root))

    @property
    def report(self) -> List[str]:
        """The loosenings made in lenient mode."""
        return list(self._c.ctx.report)

    def pointer(self, part: FrozenSet) -> str:
        """A JSON pointer of the schema at ``part`` (for error messages)."""
        return self._c.ctx.ptr(self._c.atoms.some_nid(part))

    @property
    def sink(self) -> RuleSink:
        """The shared rule table's sink (for emitting automata with ``dfa_to_expr``)."""
        return self._c.ctx.sink

    def fresh(self, hint: str) -> str:
        """A new rule name (reserved in the shared table)."""
        return self._c.ctx.sink.fresh(hint)

    def define(self, name: str, expr: Expr) -> None:
        """Set the expression of rule ``name`` (reserved with :meth:`fresh`)."""
        self._c.ctx.rules[name] = expr

    def branches(self, part: FrozenSet) -> List[FrozenSet]:
        """``part`` as disjunction-free alternatives (``anyOf``/``oneOf``/... distributed)."""
        c = self._c
        out: List[FrozenSet] = []
        stack = [(part, 0)]
        while stack:
            atoms, n = stack.pop()
            if FALSE in atoms:
                continue
            disj = [a for a in atoms if a[0] != "own" and a[0] != "chose"]
            if not disj:
                if atoms not in out:
                    out.append(atoms)
                continue
            if n > MAX_DISJUNCTION_NESTING:
                raise UnsupportedSchemaError("disjunctions nested too deeply at one location", self.pointer(atoms))
            d = min(disj, key=repr)
            stack.extend((s, n + 1) for s in reversed(c.combinators.alternatives(d, atoms - {d})))
            if len(out) + len(stack) > c.ctx.limits.max_alternatives:
                raise GrammarLimitError(f"JSON Schema expands to more than {c.ctx.limits.max_alternatives} "
                                        "alternatives at one location (CompileLimits.max_alternatives)",
                                        path=self.pointer(part))
        return out

    def kinds(self, branch: FrozenSet) -> FrozenSet[str]:
        """The JSON types a disjunction-free ``branch`` admits (``number`` for integers too)."""
        m = self._c.merger.merge(branch)
        out = set()
        for k in m.kinds:
            out.add("number" if k in (INT, FRAC) else k)
        if m.enum is not None:
            out = {("number" if kind_of(v) in (INT, FRAC) else kind_of(v)) for v in m.enum} & (out | {"number"})
        return frozenset(out)

    def object_view(self, branch: FrozenSet) -> Optional[ObjectView]:
        """The object members at a disjunction-free ``branch`` (None: no object fits)."""
        c = self._c
        m = c.merger.merge(branch)
        if OBJ not in m.kinds or m.enum is not None or m.extra_keys:
            if m.enum is not None or m.extra_keys:
                raise UnsupportedSchemaError("enum/const or negated additionalProperties on the arguments "
                                             "object are not supported in XML styles", self.pointer(branch))
            return None
        p = self.pointer(branch)
        if m.prop_names or any(upats for _, upats, _, _ in m.obj_units):
            raise UnsupportedSchemaError("patternProperties / propertyNames on the arguments object are not "
                                         "supported in XML styles", p)
        members = []
        for name in sorted(m.names, key=lambda n: m.declared.get(n, m.names[n])):
            atoms = c.keys.prop_atoms(m, name)
            if FALSE in atoms or not c.keys.name_allowed(m, name):
                if name in m.required:
                    return None
                continue
            members.append((name, atoms, name in m.required))
        additional: Optional[FrozenSet] = None
        declared = any(addl is not None for _, _, addl, _ in m.obj_units)
        if not (c.ctx.strict and not m.has_addl and c.keys.strict_objects(m)):
            acc: set = set()
            for _, _, addl, _ in m.obj_units:
                if addl is not None:
                    acc |= c.atoms.flatten(addl)
            if FALSE not in acc:
                additional = frozenset(acc)
        if m.max_props is not None and m.max_props > MAX_COUNT_BOUND or m.min_props > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"property count bound above {MAX_COUNT_BOUND}", path=p)
        return ObjectView(members, additional, m.min_props, m.max_props, p, declared)

    def array_view(self, branch: FrozenSet) -> Optional[Tuple[FrozenSet, int, Optional[int]]]:
        """``(item part, min items, max items)`` of the arrays at a disjunction-free
        ``branch`` (None: no array fits); ``prefixItems``, ``contains`` and ``uniqueItems``
        raise ``UnsupportedSchemaError``."""
        c = self._c
        m = c.merger.merge(branch)
        if ARR not in m.kinds:
            return None
        if m.enum is not None or m.contains or m.unique is not None or any(u[0] is not None for u in m.arr_units):
            raise UnsupportedSchemaError("enum/const, prefixItems, contains or uniqueItems on an array "
                                         "written as XML items are not supported", self.pointer(branch))
        acc: set = set()
        for _, rest, _ in m.arr_units:
            if rest is not None:
                acc |= c.atoms.flatten(rest)
        hi = m.max_items
        if FALSE in acc:
            hi = 0
        if hi is not None and hi < m.min_items:
            return None
        if hi is not None and hi > MAX_COUNT_BOUND or m.min_items > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"array length bound above {MAX_COUNT_BOUND}", path=self.pointer(branch))
        return (frozenset((FALSE,)) if FALSE in acc else frozenset(acc)), m.min_items, hi

    def value(self, part: FrozenSet, kinds: Sequence[str], hint: str = "value") -> Optional[Expr]:
        """A rule of the JSON values at ``part`` whose type is one of ``kinds`` (JSON type
        names); None when there are none."""
        c = self._c
        ks = tuple(sorted(set(kinds)))
        atoms = part | c.atoms.synth_atoms(("parts-kinds", ks), {"type": list(ks)})
        return c.ctx.value_ref(atoms, 1, hint)

    def string_view(self, part: FrozenSet) -> Optional[StringView]:
        """The strings at ``part`` (None: no string fits)."""
        c = self._c
        atoms = part | c.atoms.synth_atoms(("parts-kinds", ("string",)), {"type": "string"})
        dfas: List[Optional[Dfa]] = []
        plain = True
        filtered = True
        for b in self.branches(atoms):
            m = c.merger.merge(b)
            if STR not in m.kinds:
                continue
            if m.enum is not None:
                words = [v for v in m.enum if isinstance(v, str) and c.validator.enum_value_ok(v, m)]
                if words:
                    dfas.append(dfa_literals(words))
                plain = False
                continue
            key = c.strings.string_key(m)
            if key is None:
                continue
            _, lo, hi, pats, fmts, not_pats, not_fmts, not_strings = key
            if pats or fmts:
                filtered = False
            if pats or fmts or not_pats or not_fmts or not_strings or lo > 0 or hi is not None:
                plain = False
            d = c.strings.string_dfa(key)
            if d is None and (lo > 0 or hi is not None):
                d = dfa_with_length(any_string_dfa(), lo, hi)
            dfas.append(d)
        if not dfas:
            return None
        if any(d is None for d in dfas):
            return StringView(None, plain and len(dfas) == 1, filtered)
        d = dfas[0]
        for x in dfas[1:]:
            d = dfa_product(d, x, "or")
        return StringView(d, False, filtered)

    def rules(self) -> Dict[str, Expr]:
        """The rule table: every rule the parts referenced, and the caller's own."""
        rules = self._c.drain()
        del rules["root"]  # reserved by the converter, unused here: the caller names its root
        return rules
