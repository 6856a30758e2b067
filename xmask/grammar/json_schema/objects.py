"""Objects: members in the declaration order of ``properties`` (or in any order with
``any_order=True``), additional members last, ``minProperties``/``maxProperties`` as count
states.

Member values are references to value rules (:meth:`.context.Context.value_ref`); keys and
the schemas of additional members come from :mod:`.keys`.

Example::

    >>> from .converter import Converter
    >>> from .layout import Layout
    >>> conv = Converter({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["a"]},
    ...                  Layout(False))
    >>> print(conv.run())
    root ::= "{\\"a\\": " root_a "}"
    root_a ::= "null"
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ...errors import GrammarLimitError
from ..ir import EPSILON, Bytes, Expr, Repeat, RuleRef, make_choice, make_seq
from .context import Context
from .counting import counted, is_small
from .keys import Keys
from .literals import Literals
from .merged import Merged
from .vocabulary import FALSE, MAX_ANY_ORDER_PROPERTIES, MAX_COUNT_BOUND, MAX_COUNT_STATES, NEVER

__all__ = ["Objects"]


class Objects:
    """Object grammars of merged schemas."""

    def __init__(self, ctx: Context, keys: Keys, literals: Literals):
        self.ctx = ctx
        self.keys = keys
        self.literals = literals

    def gen_object(self, m: Merged, depth: int, hint: str) -> Optional[Expr]:
        """The objects of ``m``: declared members, then additional ones; None: none."""
        L = self.ctx.layout
        d1 = depth + 1
        # a name sits where ``properties`` first declares it, else where it is first mentioned:
        # a name an earlier allOf branch only requires must not precede the properties a later
        # branch declares before it
        order = sorted(m.names, key=lambda n: m.declared.get(n, m.names[n]))
        members = []  # (name, member expr or None, required)
        for name in order:
            req = name in m.required
            atoms = self.keys.prop_atoms(m, name)
            val = None
            if FALSE not in atoms and self.keys.name_allowed(m, name):
                val = self.ctx.value_ref(atoms, d1, f"{hint}_{name}")
            if val is None:
                if req:
                    return None
                continue
            if self.ctx.excludes and not self.literals.literal_allowed(name):
                if req:
                    return None
                continue
            body = self.literals.literal_body(name)
            # (make_seq of the quotes and a literal body: one literal)
            key = Bytes(b'"' + body.data + b'"') if type(body) is Bytes else make_seq([Bytes(b'"'), body, Bytes(b'"')])
            members.append((name, make_seq([key, L.key_sep(), val]), req))
        n_req = sum(1 for _, _, r in members if r)
        if m.max_props is not None and n_req > m.max_props:
            return None
        declared = list(order)
        extra = []
        for key, atoms in self.keys.key_classes(m, declared, hint):
            val = self.ctx.value_ref(atoms, d1, f"{hint}_addl")
            if val is not None:
                extra.append(make_seq([key, L.key_sep(), val]))
        addl = make_choice(extra) if extra else None
        if addl is not None and len(extra) > 1:
            addl = self.ctx.shared_rule(("addl", addl), f"{hint}_addl_member", lambda: make_choice(extra))
        if self.ctx.any_order and (len(members) > 1 or (members and addl is not None)):
            if len(members) > MAX_ANY_ORDER_PROPERTIES:
                self.ctx.unsupported(f"any_order supports at most {MAX_ANY_ORDER_PROPERTIES} properties; "
                                     "using declaration order", self.ctx.where(m), "restricted")
                body = self.members_in_order(members, addl, m, depth, hint)
            else:
                body = self.members_any_order(members, addl, m, depth, hint)
        else:
            body = self.members_in_order(members, addl, m, depth, hint)
        return self._braces(body, n_req == 0 and m.min_props == 0, depth)

    def gen_any_object(self, m: Merged, depth: int, hint: str) -> Expr:
        """:meth:`gen_object` of ``m``, the merge of no keywords (the any-value rule that
        every schema with an unconstrained member or item has): the same expression and
        rule-table calls, without the steps that find nothing (no names, one key class)."""
        key = self.keys.key_expr([], None, (), (), m, hint)  # (what key_classes gives then)
        addl = None
        if key is not None:
            val = self.ctx.value_ref(frozenset(), depth + 1, f"{hint}_addl")
            if val is not None:
                addl = make_seq([key, self.ctx.layout.key_sep(), val])
        return self._braces(self.members_in_order([], addl, m, depth, hint), True, depth)

    def _braces(self, body: Optional[Expr], may_be_empty: bool, depth: int) -> Optional[Expr]:
        """``{`` members ``}`` for the member sequences ``body`` (None: none), or ``{}``
        when ``may_be_empty``; None when neither."""
        L = self.ctx.layout
        alts = []
        if body is not None:
            alts.append(make_seq([L.open(depth), body, L.close(depth)]))
        if may_be_empty:
            alts.append(L.empty())
        if not alts:
            return None
        return make_seq([Bytes(b"{"), make_choice(alts), Bytes(b"}")])

    def _count_cap(self, m: Merged, n_members: int) -> int:
        if m.max_props is not None:
            cap = m.max_props
        else:
            cap = max(m.min_props, 1)
        if m.max_props is not None and m.max_props > MAX_COUNT_BOUND or m.min_props > MAX_COUNT_BOUND:
            raise GrammarLimitError(f"property count bound above {MAX_COUNT_BOUND}", path=m.big.get("props"))
        return cap

    def members_in_order(self, members, addl, m: Merged, depth: int, hint: str) -> Optional[Expr]:
        """Non-empty member sequences in declaration order, additional members last.

        E(i, c): the members from position i on, when c members were written (c saturates
        at ``cap`` when there is no maxProperties); E(n, c) are the additional members.
        """
        L = self.ctx.layout
        sep = L.sep(depth)
        n = len(members)
        cap = self._count_cap(m, n)
        lo_p, hi_p = m.min_props, m.max_props
        # the (i, c) states: sum over i <= n of min(i, cap) + 1, in closed form
        k = min(n, cap)
        if (n + 1) + k * (k + 1) // 2 + (n - k) * cap > MAX_COUNT_STATES:
            raise GrammarLimitError("object property counts need too many states", path=m.big.get("props"))

        def norm(c: int) -> int:
            return c if hi_p is not None else min(c, cap)

        def tail_additional(c: int) -> Optional[Expr]:
            need = max(0, lo_p - c)
            room = None if hi_p is None else hi_p - c
            if c == 0:
                need = max(need, 1)
            if room is not None and room < need:
                return None
            if addl is None:
                return EPSILON if need == 0 else None
            if room == 0:
                return EPSILON
            if c == 0:
                rest = counted(self.ctx, make_seq([sep, addl]), need - 1, None if room is None else room - 1,
                               f"{hint}_more")
                return make_seq([addl, rest])
            if c >= lo_p and hi_p is None:
                return Repeat(make_seq([sep, addl]), 0, None)
            return counted(self.ctx, make_seq([sep, addl]), need, room, f"{hint}_more")

        if lo_p == 0 and hi_p is None:
            return self._members_chain(members, sep, tail_additional, hint)
        exprs: Dict[Tuple[int, int], Optional[Expr]] = {}
        refs: Dict[Tuple[int, int], Optional[Expr]] = {}

        def ref_of(i: int, c: int) -> Optional[Expr]:
            key = (i, c)
            if key in refs:
                return refs[key]
            e = exprs.get(key)
            if e is not None and not is_small(e) and i > 0:
                name = self.ctx.sink.fresh(f"{hint}_m{i}_{c}")
                self.ctx.rules[name] = e
                e = RuleRef(name)
            refs[key] = e
            return e

        for c in range(0, min(n, cap) + 1):
            exprs[(n, c)] = tail_additional(c)
        for i in range(n - 1, -1, -1):
            _, mem, req = members[i]
            for c in range(0, min(i, cap) + 1):
                alts = []
                if hi_p is None or c + 1 <= hi_p:
                    nxt = ref_of(i + 1, norm(c + 1))
                    if nxt is not None:
                        alts.append(make_seq(([sep] if c > 0 else []) + [mem, nxt]))
                if not req:
                    skip = ref_of(i + 1, c)
                    if skip is not None:
                        alts.append(skip)
                exprs[(i, c)] = make_choice(alts) if alts else None
        return exprs.get((0, 0))

    def _members_chain(self, members, sep, tail_additional, hint: str) -> Optional[Expr]:
        """Members in order without count limits.  F(j): nothing written yet, members j..
        left, ``m_j A(j+1) | F(j+1)`` (the second alternative only when m_j is optional);
        A(j): at least one member written, ``sep F(j)``, or nothing as well when every member
        from j on is optional.  F(n) is the additional members (at least one), so A(n) is the
        tail ``(sep addl)*``.

        Each member is spelled once, in F(j): a member after the first is ``sep F(j)``, the
        same continuation as a first member, so the value of a member (usually inlined) is
        not copied into a second rule (a layout that kept ``(sep m_j)? A(j+1)`` apart from
        F(j) held every value twice: 47% of the automaton states of MaskBench objects)."""
        n = len(members)
        f_next: Optional[Expr] = tail_additional(0)  # F(j + 1), from F(n) down
        all_optional = True  # every member from j + 1 on is optional
        for j in range(n - 1, -1, -1):
            _, mem, req = members[j]
            a_next = make_seq([sep, f_next]) if f_next is not None else None
            if all_optional:
                a_next = EPSILON if a_next is None else Repeat(a_next, 0, 1)
            take = make_seq([mem, a_next]) if a_next is not None else None
            alts = [x for x in (take, None if req else f_next) if x is not None]
            body = make_choice(alts) if alts else None
            if body is not None and j > 0 and not is_small(body):
                name = self.ctx.sink.fresh(f"{hint}_first{j}")
                self.ctx.rules[name] = body
                body = RuleRef(name)
            f_next = body
            all_optional = all_optional and not req
        return f_next

    def members_any_order(self, members, addl, m: Merged, depth: int, hint: str) -> Optional[Expr]:
        """Members in any order: one rule per (members written, count) state."""
        L = self.ctx.layout
        sep = L.sep(depth)
        n = len(members)
        cap = self._count_cap(m, n)
        lo_p, hi_p = m.min_props, m.max_props
        req_mask = 0
        for i, (_, _, r) in enumerate(members):
            if r:
                req_mask |= 1 << i
        if (1 << n) * (cap + 1) > MAX_COUNT_STATES:
            raise GrammarLimitError("any_order object needs too many states")
        names: Dict[Tuple[int, int], str] = {}
        todo: List[Tuple[int, int]] = []

        def ref(s: int, c: int) -> Optional[Expr]:
            if hi_p is not None and c > hi_p:
                return None
            c = c if hi_p is not None else min(c, cap)
            key = (s, c)
            if key not in names:
                names[key] = self.ctx.sink.fresh(f"{hint}_any{s}_{c}")
                self.ctx.rules[names[key]] = None
                todo.append(key)
            return RuleRef(names[key])

        start = ref(0, 0)
        while todo:
            s, c = todo.pop()
            alts = []
            lead = [sep] if c > 0 else []
            if c > 0 and (s & req_mask) == req_mask and c >= lo_p:
                alts.append(EPSILON)
            for i, (_, mem, _) in enumerate(members):
                if not s & (1 << i):
                    nxt = ref(s | (1 << i), c + 1)
                    if nxt is not None:
                        alts.append(make_seq(lead + [mem, nxt]))
            if addl is not None:
                nxt = ref(s, c + 1)
                if nxt is not None:
                    alts.append(make_seq(lead + [addl, nxt]))
            self.ctx.rules[names[(s, c)]] = make_choice(alts) if alts else NEVER
        return start
