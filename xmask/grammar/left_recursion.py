"""Direct left recursion rewritten as repetition (the compiler refuses left recursion).

A rule whose alternatives are ``A x1 | A x2 | b1 | b2`` (each ``xi`` / ``bi`` a sequence)
matches exactly ``(b1 | b2) (x1 | x2)*``; Lark grammars write lists and operator chains that
way (``sum: sum "+" product | product``).  Indirect or hidden left recursion (``a: b "x"``,
``b: a | "y"``; ``a: c? a "x"`` with ``c`` nullable; ``a: a a | "(" a ")" | ""``, whose
rewrite ``("(" a ")" | "") a*`` still starts with ``a``) is left alone, and the compiler
reports it with the rule cycle.

Example::

    >>> from xmask.grammar.ir import Grammar
    >>> g = Grammar.from_ebnf('root ::= root "," item | item\\nitem ::= [a-z]')
    >>> print(eliminate_direct_left_recursion(g))
    root ::= item ("," item)*
    item ::= [a-z]
"""

from __future__ import annotations

from typing import List, Optional

from .ebnf import make_choice, make_seq
from .ir import EPSILON, Choice, Expr, Grammar, Repeat, RuleRef, Seq

__all__ = ["eliminate_direct_left_recursion"]


def _split(name: str, body: Expr) -> Optional[Expr]:
    """``body`` without its direct left recursion, or None if it has none (or only
    left-recursive alternatives, an empty language the compiler reports)."""
    alts = body.items if type(body) is Choice else (body,)
    base: List[Expr] = []
    tails: List[Expr] = []
    for alt in alts:
        items = alt.items if type(alt) is Seq else (alt,)
        if items and items[0] == RuleRef(name):
            tail = make_seq(items[1:])
            if tail != EPSILON:  # "A: A" adds nothing
                tails.append(tail)
            elif not tails:
                tails.append(EPSILON)  # marks the rule as rewritten
        else:
            base.append(alt)
    if not tails or not base:
        return None
    tails = [t for t in tails if t != EPSILON]
    if not tails:
        return make_choice(base)
    return make_seq([make_choice(base), Repeat(make_choice(tails), 0, None)])


def eliminate_direct_left_recursion(grammar: Grammar) -> Grammar:
    """``grammar`` with every directly left-recursive rule rewritten (same language); the
    grammar itself when no rule is."""
    rules = grammar.rules
    changed = False
    for name, body in rules.items():
        new = _split(name, body)
        if new is not None:
            rules[name] = new
            changed = True
    return Grammar(rules, root=grammar.root) if changed else grammar
