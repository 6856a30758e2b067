"""The converter's driver: wires the parts of one conversion together and generates every
value rule, distributing disjunctions and dispatching each disjunction-free alternative to
the generator of each kind it admits.

Each (atom set, depth) becomes one rule; recursion through ``$ref`` is recursion between
rules.

Example::

    >>> conv = Converter({"enum": ["a", None]}, Layout())
    >>> print(conv.run())
    root ::= "\\"a\\"" | "null"
"""

from __future__ import annotations

from collections import deque
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ... import _deadline as deadline
from ..._caller_warning import quiet_warnings
from ...errors import GrammarLimitError, UnsupportedSchemaError
from ...limits import DEFAULT_LIMITS, CompileLimits
from ..ir import Bytes, Expr, Grammar, make_choice
from .arrays import Arrays
from .atoms import AtomTable
from .combinators import Combinators
from .context import Context
from .deferrable import Deferrable
from .disjointness import Disjointness
from .keys import Keys
from .layout import Layout
from .literals import Literals
from .merge import Merger
from .merged import Merged
from .negation import Negation
from .numbers import gen_number
from .objects import Objects
from .strings import Strings
from .validator import Validator
from .vocabulary import ARR, BOOL, FALSE, FRAC, INT, MAX_DISJUNCTION_NESTING, NEVER, NULL, OBJ, STR

__all__ = ["Converter"]


class Converter:
    """One conversion: the shared :class:`.context.Context` and one object per concern, each
    given the others it uses (no concern reaches another through this object)."""

    def __init__(self, schema, layout: Layout, *, strict_mode: bool = True, lenient: bool = False,
                 any_order: bool = False, limits: CompileLimits = DEFAULT_LIMITS, excludes: Sequence[str] = ()):
        self.ctx = ctx = Context(schema, layout, strict_mode=strict_mode, lenient=lenient, any_order=any_order,
                                 limits=limits, excludes=excludes)
        self._reordered = False  # (generate_now: finish() then converts afresh)
        self.doc = ctx.doc
        self.atoms = atoms = AtomTable(ctx)
        self.strings = strings = Strings(ctx)
        self.validator = validator = Validator(ctx, atoms, strings)
        self.merger = merger = Merger(ctx, atoms)
        self.negation = negation = Negation(ctx, atoms)
        self.literals = literals = Literals(ctx, validator)
        self.keys = keys = Keys(ctx, atoms, merger, strings, validator)
        self.disjointness = Disjointness(merger, validator, strings, keys)
        self.combinators = Combinators(ctx, atoms, negation, self.disjointness)
        self.arrays = Arrays(ctx, atoms, merger, negation, validator, literals)
        self.objects = Objects(ctx, keys, literals)
        self.gen_memo: Dict[tuple, Optional[Expr]] = {}  # (atoms, depth) -> expr of a disjunction-free set
        self.inline_memo: Dict[tuple, Optional[Expr]] = {}  # (atoms, depth) -> expr of an alternative
        self.alt_budget = 0  # alternatives distributed so far (GrammarLimitError past the limit)
        self._deferrable: Optional[Deferrable] = None  # (run_partial's)

    def run(self) -> Grammar:
        """The grammar of the whole schema (its root rule is ``root``)."""
        self._queue_root()
        return Grammar(self.drain(), root="root")

    def run_partial(self) -> Tuple[Dict[str, Expr], List[str]]:
        """A lazy conversion's first part: the root rule and every queued rule that may not be
        left for later (:mod:`.deferrable`), generated in queue order, so that :meth:`finish`
        gives exactly the grammar :meth:`run` would.  Returns the rules generated so far and
        the names of those left pending (each certainly has a value, and generating it reports
        and raises nothing but compile limits).

        Example::

            >>> conv = Converter({"type": "object", "properties": {"a": {"type": "string"}}},
            ...                  Layout(False))
            >>> rules, pending = conv.run_partial()
            >>> sorted(rules), pending
            (['root'], ['root_a'])
            >>> str(conv.finish()) == str(Converter(conv.doc.root, Layout(False)).run())
            True
        """
        self._queue_root()
        self._generate_next()  # the root: where every fill starts
        self._deferrable = Deferrable(self.ctx)
        return self.generate_now(())

    def generate_now(self, names) -> Tuple[Dict[str, Expr], List[str]]:
        """After :meth:`run_partial`: generate the pending rules ``names`` too (and whatever
        they queue that may not wait); the same answer as :meth:`run_partial`'s.

        Only the queued rules that may not wait (and ``names``) are generated, each when it
        is the first such entry of the queue: the deferrable entries before it stay queued.
        Generating out of queue order changes the rule names a conversion gives (names are
        handed out in generation order), so :meth:`finish` then converts the schema afresh.

        Example::

            >>> conv = Converter({"type": "array", "items": {"type": "string"}}, Layout(True))
            >>> conv.run_partial()[1]
            ['root_item']
            >>> rules, pending = conv.generate_now(["root_item"])
            >>> sorted(rules), pending
            (['root', 'root_item', 'string'], [])
        """
        check = self._deferrable
        queue = self.ctx.queue
        names = set(names)
        waiting = deque()  # the deferrable entries met so far, in queue order
        while queue:
            entry = queue.popleft()
            name, atoms, depth = entry
            if name not in names and check.deferrable(atoms, depth):
                waiting.append(entry)
                continue
            if waiting:
                self._reordered = True  # generated before entries queued ahead of it
            queue.appendleft(entry)
            self._generate_next()  # (what it queues is looked at after the rest)
        queue.extend(waiting)
        done = {k: v for k, v in self.ctx.rules.items() if v is not None}
        return done, [name for name, _, _ in queue]

    @property
    def reordered(self) -> bool:
        """Whether rules were generated out of queue order (:meth:`finish` converts afresh)."""
        return self._reordered

    def value_rules(self) -> set:
        """The names of the value rules queued so far (each the JSON values of one atom set at
        one depth, the root's included)."""
        return set(self.ctx.memo.values())

    def finish(self) -> Grammar:
        """The whole grammar after :meth:`run_partial` (the same as :meth:`run`'s, names
        included: after an out-of-order generation, a fresh conversion's, which warns about
        nothing the first one did not).  :meth:`drain` gives this conversion's own names."""
        if self._reordered:
            ctx = self.ctx
            with quiet_warnings():
                return Converter(ctx.doc.root, ctx.layout, strict_mode=ctx.strict,
                                 lenient=ctx.lenient, any_order=ctx.any_order,
                                 limits=ctx.limits, excludes=ctx.excludes).run()
        return Grammar(self.drain(), root="root")

    def _queue_root(self) -> None:
        root_atoms = self.atoms.flatten(self.doc.nid(self.doc.root))
        self.ctx.memo[(root_atoms, 0)] = "root"
        self.ctx.sink.fresh("root")
        self.ctx.queue.append(("root", root_atoms, 0))

    def drain(self) -> Dict[str, Expr]:
        """Generate the queued rules; the rule table (never-matching rules for empty ones)."""
        while self.ctx.queue:
            self._generate_next()
        return {k: (v if v is not None else NEVER) for k, v in self.ctx.rules.items()}

    def _generate_next(self) -> None:
        name, atoms, depth = self.ctx.queue.popleft()
        try:
            expr = self.value_expr(atoms, depth, name, ())
        except RecursionError:
            raise GrammarLimitError("JSON Schema is too deeply nested") from None
        self.ctx.rules[name] = expr if expr is not None else NEVER  # (sink caps the rule count)

    def value_expr(self, atoms: FrozenSet, depth: int, hint: str, stack: tuple) -> Optional[Expr]:
        """The expression of the values satisfying ``atoms``, disjunctions distributed
        (``stack``: the atom sets being expanded, to detect non-descending cycles)."""
        deadline.check()
        if FALSE in atoms:
            return None
        disj = [a for a in atoms if a[0] != "own" and a[0] != "chose"]
        if not disj:
            # memo: negated additionalProperties (gen_extra_key) reaches the same atom sets by
            # many orders of required names; the expression does not depend on the hint
            key = (atoms, depth)
            if key not in self.gen_memo:
                self.gen_memo[key] = self.gen(self.merger.merge(atoms), atoms, depth, hint)
            return self.gen_memo[key]
        finite = self.literals.finite_values(atoms)
        if finite is not None:
            return finite(depth)
        if len(stack) > MAX_DISJUNCTION_NESTING:
            raise UnsupportedSchemaError("disjunctions (anyOf/oneOf/...) nested too deeply at one location",
                                         self.ctx.ptr(self.atoms.some_nid(atoms)))
        d = min(disj, key=repr)
        rest = atoms - {d}
        alts = self.combinators.alternatives(d, rest)
        self.alt_budget += len(alts)
        if self.alt_budget > self.ctx.limits.max_alternatives * 16:
            raise GrammarLimitError(
                "JSON Schema expands to too many alternatives (anyOf/oneOf distribution; "
                f"{16 * self.ctx.limits.max_alternatives} in all = 16 x CompileLimits.max_alternatives)",
                path=self.ctx.ptr(self.atoms.some_nid(atoms)))
        out: List[Expr] = []
        seen = set()
        for s in alts:
            if FALSE in s:
                continue
            if s == atoms or s in stack:
                raise UnsupportedSchemaError("circular schema reference that does not descend into the instance",
                                             self.ctx.ptr(self.atoms.some_nid(atoms)))
            key = (s, depth)
            if key in self.inline_memo:
                e = self.inline_memo[key]
            else:
                e = self.value_expr(s, depth, hint, stack + (atoms,))
                self.inline_memo[key] = e
            if e is not None and e not in seen:
                seen.add(e)
                out.append(e)
        if len(out) > self.ctx.limits.max_alternatives:
            raise GrammarLimitError(
                f"JSON Schema expands to more than {self.ctx.limits.max_alternatives} alternatives "
                "at one location (CompileLimits.max_alternatives)", path=self.ctx.ptr(self.atoms.some_nid(atoms)))
        return make_choice(out) if out else None

    def gen(self, m: Merged, atoms: FrozenSet, depth: int, hint: str) -> Optional[Expr]:
        """The values of a disjunction-free atom set, one alternative per kind it admits."""
        if m.enum is not None:
            return self.literals.gen_enum(m, depth, hint)
        if m.extra_keys and OBJ in m.kinds:
            return self.gen_extra_key(m, atoms, depth, hint)
        kinds = m.kinds
        for kind, path, msg in m.gated:
            if kind is None or kind in kinds:
                self.ctx.unsupported(msg, path)
        alts: List[Expr] = []
        if NULL in kinds:
            alts.append(Bytes(b"null"))
        if BOOL in kinds:
            alts.append(make_choice([Bytes(b"true"), Bytes(b"false")]))
        if INT in kinds or FRAC in kinds:
            e = gen_number(self.ctx, m, hint)
            if e is not None:
                alts.append(e)
        if STR in kinds:
            e = self.strings.gen_string(m, hint)
            if e is not None:
                alts.append(e)
        # no atoms: any value (every unconstrained member or item), whose array and object
        # generators skip the generic steps
        if ARR in kinds:
            e = self.arrays.gen_array(m, depth, hint) if atoms else self.arrays.gen_any_array(depth, hint)
            if e is not None:
                alts.append(e)
        if OBJ in kinds:
            e = self.objects.gen_object(m, depth, hint) if atoms else self.objects.gen_any_object(m, depth, hint)
            if e is not None:
                alts.append(e)
        return make_choice(alts) if alts else None

    def gen_extra_key(self, m: Merged, atoms: FrozenSet, depth: int, hint: str) -> Optional[Expr]:
        """Objects that must have a key outside a set of names and patterns (the negation of
        ``additionalProperties: false``), when the object itself admits only declared keys:
        one alternative per declared key that qualifies, made required."""
        names, patterns, nid = m.extra_keys[0]
        probe = self.merger.merge(frozenset(a for a in atoms if not (a[0] == "own" and a[1] == nid)))
        if self.keys.key_classes(probe, list(probe.names), hint):
            self.ctx.unsupported("negated additionalProperties is not supported here", self.ctx.ptr(nid))
            return self.value_expr(frozenset(a for a in atoms if a != ("own", nid)), depth, hint, ())
        alts = []
        base = frozenset(a for a in atoms if a != ("own", nid)) | self.negation.kinds_atoms({OBJ})

        def qualifies(d: str) -> bool:  # a key outside the names and patterns of the negation
            if d in names:
                return False
            return not any(self.strings.pattern_dfa_or_none(pat, self.ctx.ptr(nid)) is not None
                           and self.strings.pattern_dfa(pat).matches(d) for pat in patterns)

        if any(qualifies(d) for d in probe.required):
            # a key the object must have anyway already satisfies the negation: no branching
            # (several negations would otherwise branch on every order of the same names)
            return self.value_expr(base, depth, hint, (atoms,))
        for d in probe.names:
            if not qualifies(d):
                continue
            s = base | self.atoms.synth_atoms(("required", (d,)), {"required": [d]})
            e = self.value_expr(s, depth, hint, (atoms,))
            if e is not None:
                alts.append(e)
        return make_choice(alts) if alts else None
