"""The built-in JSON grammar: exactly RFC 8259 JSON text, any value at the root.

* no whitespace before or after the root value;
* inside arrays and objects any JSON whitespace (``[ \\t\\n\\r]*``, unbounded) around the
  structural characters ``[ ] { } : ,``, placed so that every whitespace run is matched by
  exactly one ``ws`` (the grammar is unambiguous);
* strings: any code point >= U+0020 except ``"`` and ``\\`` (UTF-8 encoded), or one of the
  escapes ``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX`` (hex digits of either case);
* numbers: ``-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?``; literals true/false/null.

Rule names: ``root``, ``value``, ``object``, ``member``, ``array``, ``element``, ``string``,
``char``, ``escape``, ``number``, ``ws``.
"""

from __future__ import annotations

from typing import Optional

from .ebnf import parse_ebnf
from .ir import Grammar

__all__ = ["JSON_EBNF", "builtin_json_grammar"]

JSON_EBNF = r"""
root    ::= value
value   ::= object | array | string | number | "true" | "false" | "null"

# "{" ws "}"  or  "{" ws member ("," ws member)* "}"
object  ::= "{" ws (member ("," ws member)*)? "}"
member  ::= string ws ":" ws value ws

array   ::= "[" ws (element ("," ws element)*)? "]"
element ::= value ws

string  ::= "\"" char* "\""
char    ::= [^"\\\x00-\x1F] | "\\" escape
escape  ::= ["\\/bfnrt] | "u" [0-9a-fA-F]{4}

number  ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\-]? [0-9]+)?

ws      ::= [ \t\n\r]*
"""

_CACHE: Optional[Grammar] = None


def builtin_json_grammar() -> Grammar:
    """The (cached) grammar of any RFC 8259 JSON value.

    Example::

        >>> builtin_json_grammar().root
        'root'
    """
    global _CACHE
    if _CACHE is None:
        _CACHE = parse_ebnf(JSON_EBNF, root_rule_name="root")
    return _CACHE
