"""Helpers for tests and notebooks (mirrors ``xgrammar.testing``)."""

from __future__ import annotations

from typing import Union

from .grammar.ir import Grammar


def is_grammar_accept_string(grammar: Union[Grammar, str], text: Union[str, bytes]) -> bool:
    """Whether ``text`` is a complete sentence of ``grammar`` (a Grammar or EBNF text).

    Uses the independent reference recognizer (no tokenizer involved).

    Example::

        >>> is_grammar_accept_string('root ::= "a"+', "aaa")
        True
        >>> is_grammar_accept_string('root ::= "a"+', "ab")
        False
    """
    from .grammar.recognizer import Recognizer

    if isinstance(grammar, str):
        grammar = Grammar.from_ebnf(grammar)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return Recognizer(grammar).accepts(data)
