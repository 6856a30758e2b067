"""Shortest-match ("lazy") languages of regular expressions.

A lazy terminal (llguidance's and XGrammar's ``name[lazy]: /.../``, ``[stop=...]``,
``[suffix=...]`` in Lark) stops at its first possible end: its language is the strings of
``expr`` that have no proper prefix in ``expr``.  That is regular: determinize ``expr`` (over
code points, :func:`~xmask.grammar.dfa_expr.dfa_from_expr`), drop the edges out of
accepting states, and emit the automaton as IR.

Example::

    >>> from xmask.grammar.ir import Grammar
    >>> from xmask.grammar.regex import regex_to_expr
    >>> from xmask.grammar.recognizer import Recognizer
    >>> rules = {}
    >>> expr = shortest_match(regex_to_expr(r"[\\s\\S]*<end>"), {}, rules, "t")
    >>> r = Recognizer(Grammar({"root": expr, **rules}))
    >>> r.accepts(b"ab<end>"), r.accepts(b"a<end>b<end>"), r.accepts(b"<en<end>")
    (True, False, True)

``RuleRef`` leaves are expanded through ``definitions`` (they must not recurse).  Raises
``ValueError`` for token sets, raw-byte classes, recursion and an empty language, and
``GrammarLimitError`` past the automaton size limits.
"""

from __future__ import annotations

from typing import Dict, List

from .ir import Choice, Expr, Repeat, RuleRef, Seq, TokenSet, node_kind
from .code_point_dfa import MAX_DFA_STATES, Dfa
from .dfa_expr import dfa_from_expr, dfa_to_expr
from .rule_sink import RuleSink

__all__ = ["shortest_match"]


def _inline(expr: Expr, definitions: Dict[str, Expr], active: List[str]) -> Expr:
    t = node_kind(expr)
    if t is RuleRef:
        name = expr.name
        if name in active or name not in definitions:
            raise ValueError(f"'{name}' recurses or is undefined inside a lazy terminal")
        active.append(name)
        out = _inline(definitions[name], definitions, active)
        active.pop()
        return out
    if t is Seq or t is Choice:
        return t(tuple(_inline(x, definitions, active) for x in expr.items))
    if t is Repeat:
        return Repeat(_inline(expr.item, definitions, active), expr.min, expr.max)
    if t is TokenSet:
        raise ValueError("special tokens cannot be in a lazy terminal")
    return expr


def shortest_match(expr: Expr, definitions: Dict[str, Expr], rules: Dict[str, Expr],
                   hint: str, max_states: int = MAX_DFA_STATES) -> Expr:
    """An expression for the shortest-match language of ``expr``; the rules it needs are
    added to ``rules`` under fresh names starting with ``hint``."""
    dfa = dfa_from_expr(_inline(expr, definitions, []), max_states)
    cut = Dfa([() if acc else edges for edges, acc in zip(dfa.edges, dfa.accept)],
              list(dfa.accept))
    out = dfa_to_expr(cut, RuleSink(rules), hint=f"{hint}_lazy")
    if out is None:
        raise ValueError("the lazy terminal matches nothing")
    return out
