"""Print a :class:`~xmask.grammar.ir.Grammar` as normalized GBNF-style EBNF.

One rule per line (``name ::= expr``), the root rule first, then the others in definition
order.  For every grammar produced by :func:`~xmask.grammar.ebnf.parse_ebnf`,
``parse_ebnf(grammar_to_ebnf(g)) == g``.

Escaping:

* string literals escape ``"``, ``\\``, ``\\n``/``\\r``/``\\t``, other control and
  non-printable characters (``\\xHH`` / ``\\uHHHH`` / ``\\UHHHHHHHH``, by code point); valid
  non-ASCII UTF-8 is printed as the characters themselves.
* character classes additionally escape ``]``, ``[``, ``-`` and ``^``.
* the empty string (``Seq(())`` or ``Bytes(b"")``) is printed ``""``; ``CharClass((), True)``
  (any character) is printed ``.``.
* a :class:`TokenSet` is printed ``Token(1, 2)`` / ``ExcludeToken(3)`` (XGrammar's syntax).

Constructs with no GBNF syntax (only produced by other front-ends, never by the EBNF parser)
are printed approximately and do **not** round-trip exactly:

* bytes of a :class:`Bytes` literal that are not part of valid UTF-8 are printed ``\\xHH``,
  which re-parses as the *code point* U+00HH (encoded as two UTF-8 bytes);
* a ``byte_level=True`` :class:`CharClass` (one raw byte) is printed ``[\\xHH-\\xHH]``, which
  re-parses as a class of *code points* U+00HH.
"""

from __future__ import annotations

from typing import List

from .ir_expr import Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq, TokenSet

__all__ = ["grammar_to_ebnf", "expr_to_ebnf"]

_STRING_SPECIAL = {0x22: '\\"', 0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_CLASS_SPECIAL = {
    0x5C: "\\\\",
    0x5D: "\\]",
    0x5B: "\\[",
    0x2D: "\\-",
    0x5E: "\\^",
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
}

# precedence levels
_CHOICE, _SEQ, _POSTFIX = 0, 1, 2


def _escape_cp(cp: int) -> str:
    if cp < 0x100:
        return f"\\x{cp:02X}"
    if cp < 0x10000:
        return f"\\u{cp:04X}"
    return f"\\U{cp:08X}"


def _printable(cp: int) -> bool:
    if cp < 0x20 or cp == 0x7F or 0xD800 <= cp <= 0xDFFF:
        return False
    return chr(cp).isprintable()


def _cp_in_string(cp: int) -> str:
    special = _STRING_SPECIAL.get(cp)
    if special is not None:
        return special
    return chr(cp) if _printable(cp) else _escape_cp(cp)


def _cp_in_class(cp: int) -> str:
    special = _CLASS_SPECIAL.get(cp)
    if special is not None:
        return special
    return chr(cp) if _printable(cp) else _escape_cp(cp)


def _utf8_len(lead: int) -> int:
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _string_literal(data: bytes) -> str:
    out = ['"']
    i, n = 0, len(data)
    while i < n:
        k = _utf8_len(data[i])
        ch = None
        if k and i + k <= n:
            try:
                ch = data[i : i + k].decode("utf-8")
            except UnicodeDecodeError:
                ch = None
        if ch is None:  # not valid UTF-8: approximate with the byte value
            out.append(f"\\x{data[i]:02X}")
            i += 1
        else:
            out.append(_cp_in_string(ord(ch)))
            i += k
    out.append('"')
    return "".join(out)


def _char_class(cc: CharClass) -> str:
    if cc.negated and not cc.ranges:
        return "."
    out = ["[^" if cc.negated else "["]
    if cc.byte_level:
        for lo, hi in cc.ranges:
            out.append(f"\\x{lo:02X}" if lo == hi else f"\\x{lo:02X}-\\x{hi:02X}")
    else:
        for lo, hi in cc.ranges:
            if lo == hi:
                out.append(_cp_in_class(lo))
            elif hi == lo + 1:
                out.append(_cp_in_class(lo) + _cp_in_class(hi))
            else:
                out.append(_cp_in_class(lo) + "-" + _cp_in_class(hi))
    out.append("]")
    return "".join(out)


def _repeat_suffix(r: Repeat) -> str:
    lo, hi = r.min, r.max
    if hi is None:
        if lo == 0:
            return "*"
        if lo == 1:
            return "+"
        return f"{{{lo},}}"
    if lo == 0 and hi == 1:
        return "?"
    if lo == hi:
        return f"{{{lo}}}"
    if lo == 0:
        return f"{{0,{hi}}}"
    return f"{{{lo},{hi}}}"


def _children(e: Expr, level: int):
    """The (child, precedence level) pairs ``e`` is printed from; None for a leaf."""
    if isinstance(e, (Bytes, CharClass, RuleRef, TokenSet)):
        return None
    if isinstance(e, Seq):
        if not e.items:
            return None
        if len(e.items) == 1:
            return [(e.items[0], level)]
        return [(i, _SEQ + 1) for i in e.items]
    if isinstance(e, Choice):
        if len(e.items) == 1:
            return [(e.items[0], level)]
        return [(i, _SEQ) for i in e.items]
    if isinstance(e, Repeat):
        return [(e.item, _CHOICE if isinstance(e.item, Repeat) else _POSTFIX + 1)]
    raise TypeError(f"not a grammar expression: {e!r}")


def _leaf(e: Expr) -> str:
    if isinstance(e, Bytes):
        return _string_literal(e.data)
    if isinstance(e, CharClass):
        return _char_class(e)
    if isinstance(e, RuleRef):
        return e.name
    if isinstance(e, TokenSet):  # XGrammar's spelling
        return f"{'ExcludeToken' if e.negated else 'Token'}({', '.join(map(str, e.ids))})"
    return '""'  # the empty Seq


def _combine(e: Expr, level: int, parts: List[str]) -> str:
    if len(parts) == 1 and isinstance(e, (Seq, Choice)):
        return parts[0]
    if isinstance(e, Seq):
        text = " ".join(parts)
        return f"({text})" if level > _SEQ else text
    if isinstance(e, Choice):
        text = " | ".join(parts)
        return f"({text})" if level > _CHOICE else text
    body = f"({parts[0]})" if isinstance(e.item, Repeat) else parts[0]
    return body + _repeat_suffix(e)


def _expr(e: Expr, level: int) -> str:
    # Iterative (an explicit stack): expressions built from long bounded repeats nest
    # thousands of levels deep, past Python's recursion limit.
    done: List[str] = []
    work = [(e, level, None)]
    while work:
        x, lvl, kids = work.pop()
        if kids is None:
            kids = _children(x, lvl)
            if kids is None:
                done.append(_leaf(x))
                continue
            work.append((x, lvl, kids))
            work.extend((c, cl, None) for c, cl in reversed(kids))
        else:
            parts = done[len(done) - len(kids):]
            del done[len(done) - len(kids):]
            done.append(_combine(x, lvl, parts))
    return done[0]


def expr_to_ebnf(expr: Expr) -> str:
    """One expression as EBNF text (top-level alternatives are not parenthesized)."""
    return _expr(expr, _CHOICE)


def grammar_to_ebnf(grammar) -> str:
    """Normalized EBNF text of ``grammar`` (a :class:`~xmask.grammar.ir.Grammar`, which prints
    itself with this function): one ``name ::= expr`` line per rule, root first.

    Example::

        >>> from xmask.grammar.ebnf import parse_ebnf
        >>> print(grammar_to_ebnf(parse_ebnf('x ::= "b"\\nroot ::= x+ | [a-c]')))
        root ::= x+ | [a-c]
        x ::= "b"
    """
    rules = grammar.rules
    root = grammar.root
    order: List[str] = [root] + [name for name in rules if name != root]
    captures = grammar.captures
    budgets = grammar.budgets
    return "\n".join(f"{name}{_attrs(captures.get(name), budgets.get(name))} ::= "
                     f"{expr_to_ebnf(rules[name])}" for name in order)


def _attrs(capture, budget) -> str:
    # XGrammar prints a captured rule as ``rule[capture="name"]``, a budget as [max_tokens=n]
    out = []
    if capture is not None:
        out.append(f"capture={_string_literal(capture.encode('utf-8'))}")
    if budget is not None:
        out.append(f"max_tokens={budget}")
    return f"[{', '.join(out)}]" if out else ""
