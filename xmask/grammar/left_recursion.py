"""Left recursion rewritten as repetition (the compiler refuses left recursion).

A rule whose alternatives are ``A x1 | A x2 | b1 | b2`` (each ``xi`` / ``bi`` a sequence)
matches exactly ``(b1 | b2) (x1 | x2)*``; Lark grammars write lists and operator chains that
way (``sum: sum "+" product | product``).  Indirect left recursion (``a: b "x" | "y"``,
``b: a "z" | "w"``) is first made direct by substituting, inside each left-recursive group of
rules, a leading reference to an earlier rule of the group by that rule's alternatives
(Paull's algorithm); every step keeps the language.

What is left alone (and reported by the compiler with the rule cycle): left recursion behind
a nullable prefix (``a: c? a "x"``; ``a: a a | "(" a ")" | ""``, whose rewrite
``("(" a ")" | "") a*`` still starts with ``a``), and groups whose substitution would exceed
:data:`MAX_ALTERNATIVES` alternatives.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> g = parse_ebnf('root ::= root "," item | item\\nitem ::= [a-z]')
    >>> print(eliminate_left_recursion(g))
    root ::= item ("," item)*
    item ::= [a-z]
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from .._graph import strongly_connected_components
from .ir import (EPSILON, Bytes, CharClass, Choice, Expr, Grammar, Repeat, RuleRef, Seq, TokenSet,
                 iter_refs, make_choice, make_seq, node_kind)

__all__ = ["MAX_ALTERNATIVES", "eliminate_left_recursion"]

MAX_ALTERNATIVES = 2000

Alt = Tuple[Expr, ...]


def _direct(name: str, alts: List[Alt]) -> Optional[Expr]:
    """The rule ``name`` with alternatives ``alts`` without its direct left recursion, or None
    if it has none (or only left-recursive alternatives: an empty language, reported later)."""
    base: List[Expr] = []
    tails: List[Expr] = []
    recursive = False
    for alt in alts:
        if alt and alt[0] == RuleRef(name):
            recursive = True
            tail = make_seq(alt[1:])
            if tail != EPSILON:  # "A: A" adds nothing
                tails.append(tail)
        else:
            base.append(make_seq(alt))
    if not recursive or not base:
        return None
    if not tails:
        return make_choice(base)
    return make_seq([make_choice(base), Repeat(make_choice(tails), 0, None)])


class _Analysis:
    """Nullable rules and the rules each expression can call first (after nullable items)."""

    def __init__(self, rules: Dict[str, Expr]):
        self.rules = rules
        self.nullable_rules: Set[str] = set()
        refs = {name: sorted(set(iter_refs(body))) for name, body in rules.items()}
        # components come after the ones they reach: each is solved once, by a local fixpoint
        for comp in strongly_connected_components(list(rules), refs.__getitem__):
            changed = True
            while changed:
                changed = False
                for name in comp:
                    if name not in self.nullable_rules and self.nullable(rules[name]):
                        self.nullable_rules.add(name)
                        changed = True

    def nullable(self, e: Expr) -> bool:
        t = node_kind(e)
        if t is Bytes:
            return not e.data
        if t is CharClass or t is TokenSet:
            return False
        if t is Seq:
            return all(self.nullable(x) for x in e.items)
        if t is Choice:
            return any(self.nullable(x) for x in e.items)
        if t is Repeat:
            return e.min == 0 or self.nullable(e.item)
        return e.name in self.nullable_rules  # RuleRef

    def left_refs(self, e: Expr, out: Set[str]) -> Set[str]:
        t = node_kind(e)
        if t is RuleRef:
            out.add(e.name)
        elif t is Seq:
            for x in e.items:
                self.left_refs(x, out)
                if not self.nullable(x):
                    break
        elif t is Choice:
            for x in e.items:
                self.left_refs(x, out)
        elif t is Repeat and e.max != 0:
            self.left_refs(e.item, out)
        return out


def _alternatives(e: Expr, group: Set[str], an: _Analysis) -> List[Alt]:
    """``e`` as a list of sequences, with a leading group or repetition that can call a rule
    of ``group`` first spread out (so that such a call is the first item)."""
    items = e.items if type(e) is Seq else (e,)
    if type(e) is Choice:
        return [a for x in e.items for a in _alternatives(x, group, an)]
    if not items:
        return [()]
    first, rest = items[0], items[1:]
    if not (an.left_refs(first, set()) & group):
        return [tuple(items)]
    if type(first) is Choice or type(first) is Seq:
        return [a + rest for a in _alternatives(first, group, an)]
    if type(first) is Repeat and first.min >= 1:
        more = Repeat(first.item, first.min - 1, None if first.max is None else first.max - 1)
        return [a + (more,) + rest for a in _alternatives(first.item, group, an)]
    return [tuple(items)]


def _left_graph(rules: Dict[str, Expr], an: _Analysis) -> Dict[str, List[str]]:
    return {name: sorted(an.left_refs(body, set()) & rules.keys())
            for name, body in rules.items()}


def eliminate_left_recursion(grammar: Grammar) -> Grammar:
    """``grammar`` with its left recursion rewritten where the module docstring says it can
    be (same language); the grammar itself when nothing changes."""
    rules = grammar.rules
    an = _Analysis(rules)
    graph = _left_graph(rules, an)
    changed = False
    for comp in strongly_connected_components(list(rules), graph.__getitem__):
        if len(comp) == 1 and comp[0] not in graph[comp[0]]:
            continue  # not left-recursive
        order = [name for name in rules if name in set(comp)]  # definition order
        new = _paull(order, rules, an)
        if new is not None:
            rules.update(new)
            changed = True
    return Grammar(rules, root=grammar.root, captures=grammar.captures,
                   budgets=grammar.budgets) if changed else grammar


def _paull(order: List[str], rules: Dict[str, Expr], an: _Analysis) -> Optional[Dict[str, Expr]]:
    group = set(order)
    done: Dict[str, List[Alt]] = {}
    out: Dict[str, Expr] = {}
    for i, name in enumerate(order):
        alts = _alternatives(rules[name], group, an)
        for earlier in order[:i]:
            spread: List[Alt] = []
            for alt in alts:
                if alt and alt[0] == RuleRef(earlier):
                    spread.extend(a + alt[1:] for a in done[earlier])
                else:
                    spread.append(alt)
            alts = spread
            if len(alts) > MAX_ALTERNATIVES:
                return None
        body = _direct(name, alts)
        if body is None:
            body = make_choice([make_seq(a) for a in alts])
        out[name] = body
        done[name] = _alternatives(body, group, an)
    return out
