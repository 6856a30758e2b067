"""Lowering of EBNF ``TagDispatch(...)`` / ``TokenTagDispatch(...)`` atoms into IR rules.

XGrammar's meaning (its EBNF documentation, checked against XGrammar 0.2.8): free text that
contains no trigger, which may end anywhere; when a trigger appears the trigger's rule must
follow; then, with ``loop_after_dispatch=true`` (the default), free text again, otherwise the
dispatch is over.  ``excludes`` are strings that never appear in the free text.

``TagDispatch`` is built by :mod:`xmask.grammar.free_text` (shared with structural tags);
``TokenTagDispatch`` works on whole tokens: a free token is any token but the triggers and
the excluded ids.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> from xmask.grammar.recognizer import Recognizer
    >>> g = parse_ebnf('root ::= TagDispatch(("<a>", a))\\na ::= [0-9]+ "</a>"')
    >>> [Recognizer(g).accepts(s) for s in (b"hi <a>12</a> ok", b"hi <a>x</a>", b"hi <")]
    [True, False, True]
"""

from __future__ import annotations

from typing import Dict

from .combine import RuleNamer
from .ebnf_builtins import TokenTagDispatchSpec
from .free_text import FreeText, lower_free_text
from .ir import Choice, Expr, Repeat, RuleRef, Seq, TokenSet

__all__ = ["lower_dispatch"]


def lower_dispatch(rules: Dict[str, Expr], name: str, spec, namer: RuleNamer,
                   special_texts=frozenset()) -> None:
    """Replace the placeholder rule ``name`` by the rules of the parsed dispatch ``spec``;
    triggers in ``special_texts`` (special tokens' texts) may also come whole (see
    ``FreeText.whole_texts``)."""
    if isinstance(spec, TokenTagDispatchSpec):
        rules[name] = _token_dispatch(spec)
        return
    free = FreeText(triggers=tuple((t, RuleRef(r)) for t, r in spec.pairs), excludes=tuple(spec.excludes),
                    loop=spec.loop_after_dispatch, can_end=True, max_chars=spec.max_chars,
                    whole_texts=tuple(t for t, _ in spec.pairs if t in special_texts))
    rules[name] = lower_free_text(rules, namer, free, hint=f"{name}_text")


def _token_dispatch(spec) -> Expr:
    triggers = [t for t, _ in spec.pairs]
    free = TokenSet(list(spec.excludes) + triggers, negated=True)
    calls = [Seq((TokenSet((t,)), RuleRef(r))) for t, r in spec.pairs]
    if spec.loop_after_dispatch:
        return Repeat(Choice(tuple([free] + calls)) if calls else free, 0, None)
    if not calls:
        return Repeat(free, 0, None)
    dispatch = calls[0] if len(calls) == 1 else Choice(tuple(calls))
    return Seq((Repeat(free, 0, None), Repeat(dispatch, 0, 1)))
