"""Grammar IR <-> JSON: the rules as a table of shared nodes.

Front-ends share sub-expressions freely (a JSON-schema grammar is a DAG whose tree expansion can
be exponential), so expressions are written once each into a ``nodes`` table, children first,
and referred to by index; structurally equal nodes get one entry.  Each node is a short list:

* ``["b", text]``                 ``Bytes`` (the bytes as a latin-1 string: exact, compact)
* ``["c", [lo, hi, ...], neg, byte_level]``  ``CharClass`` (flat range bounds, 0/1 flags)
* ``["s", [i, ...]]`` / ``["|", [i, ...]]``  ``Seq`` / ``Choice``
* ``["r", name]``                 ``RuleRef``
* ``["*", i, min, max]``          ``Repeat`` (``max`` null = unbounded)
* ``["t", [id, ...], neg]``        ``TokenSet`` (``Token(...)``, negated: ``ExcludeToken(...)``)

A node may only refer to earlier nodes, so decoding is one forward pass and cannot loop.  The
EBNF printer is not used: it cannot spell raw-byte classes or non-UTF-8 literals exactly.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> g = parse_ebnf('root ::= "a" [0-9]* | item\\nitem ::= "b"')
    >>> rules_from_body(grammar_to_body(g), "Grammar") == (g.rules, g.root, {}, {})
    True

Grammars are rebuilt from the rule table by :func:`xmask.grammar.ir.grammar_from_body` (this
module sits below the IR's ``Grammar``, which serializes itself with it).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ..errors import DeserializeFormatError
from ..grammar.ir_expr import Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq, TokenSet
from .fields import get_list, get_str
from .format import format_error

__all__ = ["grammar_to_body", "rules_from_body"]


def _children(expr) -> tuple:
    if isinstance(expr, (Seq, Choice)):
        return expr.items
    if isinstance(expr, Repeat):
        return (expr.item,)
    return ()


def grammar_to_body(grammar) -> Dict[str, Any]:
    """The JSON-ready form of ``grammar`` (a :class:`~xmask.grammar.ir.Grammar`; see the module
    docstring)."""
    nodes: List[list] = []
    interned: Dict[tuple, int] = {}  # encoded node -> index (structural sharing)
    index_of: Dict[int, int] = {}  # id(expr) -> index (each object walked once)
    keep = []  # keeps walked objects alive so their ids stay unique

    def encode(e) -> list:
        if isinstance(e, Bytes):
            return ["b", bytes(e.data).decode("latin-1")]
        if isinstance(e, CharClass):
            flat = [x for lo_hi in e.ranges for x in lo_hi]
            return ["c", flat, int(e.negated), int(e.byte_level)]
        if isinstance(e, Seq):
            return ["s", [index_of[id(c)] for c in e.items]]
        if isinstance(e, Choice):
            return ["|", [index_of[id(c)] for c in e.items]]
        if isinstance(e, RuleRef):
            return ["r", e.name]
        if isinstance(e, Repeat):
            return ["*", index_of[id(e.item)], e.min, e.max]
        if isinstance(e, TokenSet):
            return ["t", list(e.ids), int(e.negated)]
        raise TypeError(f"unknown grammar node {e!r}")

    def add(root) -> int:
        # iterative post-order: 1,000-deep schemas must not hit the recursion limit
        stack = [(root, False)]
        while stack:
            e, expanded = stack.pop()
            if id(e) in index_of:
                continue
            if not expanded:
                stack.append((e, True))
                stack.extend((c, False) for c in _children(e) if id(c) not in index_of)
                continue
            node = encode(e)
            key = (node[0], tuple(node[1]) if isinstance(node[1], list) else node[1], *node[2:])
            idx = interned.get(key)
            if idx is None:
                idx = interned[key] = len(nodes)
                nodes.append(node)
            index_of[id(e)] = idx
            keep.append(e)
        return index_of[id(root)]

    rules = [[name, add(expr)] for name, expr in grammar]
    body = {"root": grammar.root, "rules": rules, "nodes": nodes}
    if grammar.captures:  # optional: absent in grammars without capture attributes
        body["captures"] = [[r, name] for r, name in grammar.captures.items()]
    if grammar.budgets:  # optional: rules with a runtime token budget (max_tokens over text)
        body["budgets"] = [[r, n] for r, n in grammar.budgets.items()]
    return body


def _int(v, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise format_error(where, f"expected an int, got {type(v).__name__}")
    return v


def _ref(v, n: int, where: str) -> int:
    i = _int(v, where)
    if not 0 <= i < n:
        raise format_error(where, f"node index {i} does not refer to an earlier node (0..{n - 1})")
    return i


def _decode_node(node, built: list, where: str):
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise format_error(where, "expected a [tag, ...] list")
    tag, n = node[0], len(built)
    try:
        if tag == "b" and len(node) == 2 and isinstance(node[1], str):
            return Bytes(node[1].encode("latin-1"))
        if tag == "c" and len(node) == 4 and isinstance(node[1], list) and len(node[1]) % 2 == 0:
            flat = [_int(x, where) for x in node[1]]
            return CharClass(tuple(zip(flat[::2], flat[1::2])), bool(_int(node[2], where)),
                             bool(_int(node[3], where)))
        if tag in ("s", "|") and len(node) == 2 and isinstance(node[1], list):
            items = tuple(built[_ref(i, n, where)] for i in node[1])
            if tag == "s":
                return Seq(items)
            if not items:
                raise format_error(where, "a choice needs at least one alternative")
            return Choice(items)
        if tag == "r" and len(node) == 2 and isinstance(node[1], str):
            return RuleRef(node[1])
        if tag == "*" and len(node) == 4:
            hi = None if node[3] is None else _int(node[3], where)
            return Repeat(built[_ref(node[1], n, where)], _int(node[2], where), hi)
        if tag == "t" and len(node) == 3 and isinstance(node[1], list):
            return TokenSet([_int(x, where) for x in node[1]], bool(_int(node[2], where)))
    except DeserializeFormatError:
        raise
    except (ValueError, UnicodeEncodeError) as exc:  # bad ranges / bounds / non-latin-1 text
        raise format_error(where, str(exc)) from None
    raise format_error(where, f"malformed node {str(node)[:80]}")


def rules_from_body(body: Any, where: str) -> Tuple[Dict[str, Expr], str, Dict[str, str],
                                                   Dict[str, int]]:
    """The rules, root name, captures (rule -> capture name) and token budgets of :func:`grammar_to_body` output; every malformed piece raises
    ``DeserializeFormatError`` naming its place (``where`` is the body's own path).  Whether
    every referenced rule exists is the ``Grammar`` constructor's check."""
    root = get_str(body, "root", where)
    raw_nodes = get_list(body, "nodes", where)
    built: list = []
    for i, node in enumerate(raw_nodes):
        built.append(_decode_node(node, built, f"{where}.nodes[{i}]"))
    rules = {}
    for i, entry in enumerate(get_list(body, "rules", where)):
        at = f"{where}.rules[{i}]"
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise format_error(at, "expected [name, node index]")
        if entry[0] in rules:
            raise format_error(at, f"rule {entry[0]!r} is defined twice")
        rules[entry[0]] = built[_ref(entry[1], len(built), at)]
    captures = {}
    raw = body.get("captures", []) if isinstance(body, dict) else []
    if not isinstance(raw, list):
        raise format_error(f"{where}.captures", "expected a list of [rule, capture name]")
    for i, entry in enumerate(raw):
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry)
                and entry[0] in rules):
            raise format_error(f"{where}.captures[{i}]", "expected [defined rule, capture name]")
        captures[entry[0]] = entry[1]
    budgets = {}
    raw = body.get("budgets", []) if isinstance(body, dict) else []
    if not isinstance(raw, list):
        raise format_error(f"{where}.budgets", "expected a list of [rule, max_tokens]")
    for i, entry in enumerate(raw):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and entry[0] in rules and type(entry[1]) is int and 1 <= entry[1] < 2**31):
            raise format_error(f"{where}.budgets[{i}]", "expected [defined rule, max_tokens >= 1]")
        budgets[entry[0]] = entry[1]
    return rules, root, captures, budgets
