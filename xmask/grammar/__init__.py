"""Grammar front-end: the IR, the GBNF/EBNF parser and printer, the built-in JSON grammar,
and an independent reference recognizer (a test oracle).

Example::

    >>> from xmask.grammar import parse_ebnf, Recognizer
    >>> g = parse_ebnf('root ::= "a"+ | "b"')
    >>> Recognizer(g).accepts(b"aaa")
    True
"""

from .builtin_json import JSON_EBNF, builtin_json_grammar
from .ebnf import parse_ebnf
from .ir import (EPSILON, Bytes, CharClass, Choice, Expr, Grammar, Repeat, RuleRef, Seq, TokenSet, iter_refs,
                 make_choice, make_seq)
from .printer import expr_to_ebnf, grammar_to_ebnf
from .recognizer import Recognizer, State
from .regex import regex_to_expr, regex_to_grammar

__all__ = [
    "Bytes",
    "CharClass",
    "Choice",
    "EPSILON",
    "Expr",
    "Grammar",
    "JSON_EBNF",
    "Recognizer",
    "Repeat",
    "RuleRef",
    "Seq",
    "State",
    "TokenSet",
    "builtin_json_grammar",
    "expr_to_ebnf",
    "grammar_to_ebnf",
    "iter_refs",
    "make_choice",
    "make_seq",
    "parse_ebnf",
    "regex_to_expr",
    "regex_to_grammar",
]
