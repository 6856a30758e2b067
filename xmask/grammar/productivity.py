"""Which rules of a grammar IR have some sentence (are *productive*), from the IR alone.

The automaton decides this on its states (``compiler/_analysis.prune_unproductive``); a lazy
build (issue 10) needs it per rule before any automaton exists (a compiled pass on the IR,
``compiler/_first_reach.productive_rule_names``, whose twin this is), and the tests of the lazy JSON
Schema front end (:mod:`.json_schema.deferrable`) need an answer that does not come from the
automaton they check.  Least fixpoint: a rule is productive once its body is, and a rule on a
cycle with no way out is not.

Example::

    >>> from .ir import Bytes, CharClass, RuleRef, Seq, Choice
    >>> sorted(productive_rules({"root": Choice((RuleRef("a"), RuleRef("b"))),
    ...                          "a": Seq((Bytes(b"x"), RuleRef("a"))),
    ...                          "b": CharClass(((48, 57),))}))
    ['b', 'root']
"""

from __future__ import annotations

from typing import Dict, Set

from .ir_expr import (Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet, WordComplement,
                      node_kind)

__all__ = ["productive_rules", "expr_productive"]


def productive_rules(rules: Dict[str, object]) -> Set[str]:
    """The names of the productive rules of ``rules`` (name -> expression); a reference to a
    rule that is not in ``rules`` counts as unproductive."""
    known: Set[str] = set()
    changed = True
    while changed:  # rounds <= number of rules; each finds at least one more or stops
        changed = False
        for name, body in rules.items():
            if name not in known and expr_productive(body, known):
                known.add(name)
                changed = True
    return known


def expr_productive(e, productive: Set[str]) -> bool:
    """Whether expression ``e`` has a sentence when exactly the rules in ``productive`` do
    (iterative: converted schemas nest thousands of levels deep)."""
    memo: Dict[int, bool] = {}
    stack = [(e, False)]
    while stack:
        x, ready = stack.pop()
        key = id(x)
        if key in memo:
            continue
        if type(x) is WordComplement:
            # the strings over an alphabet but a finite few: some are left unless the alphabet
            # is empty and the empty word is excluded (never expanded here)
            memo[key] = bool(x.alphabet) or "" not in x.words
            continue
        kind = node_kind(x)
        if kind is Seq or kind is Choice or kind is Repeat:
            items = (x.item,) if kind is Repeat else x.items
            if not ready:
                stack.append((x, True))
                stack.extend((c, False) for c in items if id(c) not in memo)
                continue
            if kind is Seq:
                memo[key] = all(memo[id(c)] for c in items)
            elif kind is Choice:
                memo[key] = any(memo[id(c)] for c in items)
            else:
                memo[key] = x.min == 0 or memo[id(x.item)]
        elif kind is Bytes:
            memo[key] = True
        elif kind is CharClass:
            memo[key] = bool(x.positive_ranges())  # (surrogates are no characters)
        elif kind is RuleRef:
            memo[key] = x.name in productive
        elif kind is TokenSet:
            # a negated set lists the ids it leaves out; the vocabulary is not known here, so
            # only a plain empty set counts as having no token
            memo[key] = x.negated or bool(x.ids)
        else:
            raise TypeError(f"not a grammar expression: {type(x).__name__}")
    return memo[id(e)]
