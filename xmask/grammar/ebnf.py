"""GBNF (llama.cpp) / XGrammar EBNF parser -> :class:`~xmask.grammar.ir.Grammar`.

Syntax accepted::

    # comment to end of line
    name ::= expr                 names: [a-zA-Z_][a-zA-Z0-9_-]*
    expr  := alt ("|" alt)*       empty alternatives allowed ("ws ::= | \" \"")
    alt   := postfixed*
    postfixed := atom ("*" | "+" | "?" | "{m}" | "{m,}" | "{m,n}" | "{,n}")*
    atom  := "string" | [class] | [^class] | . | ( expr ) | rule-name

A rule body may span several lines: it ends where the next ``name ::=`` begins (on one line)
or at the end of the text.  String and class escapes: ``\\n \\r \\t \\\\ \\" \\' \\[ \\] \\- \\/
\\xHH \\uHHHH \\UHHHHHHHH`` (classes also ``\\^``); every escape denotes a *code point*, and
literals are encoded as UTF-8.  ``.`` is any character.

Not supported (a :class:`GrammarSyntaxError` with the position is raised): single-quoted
strings, XGrammar lookahead assertions ``(= ...)``, ``TagDispatch(...)``.

The result is lightly simplified: nested sequences / alternations are flattened, single-item
sequences and alternations unwrapped, adjacent literals fused, and the empty string (an empty
alternative, ``""`` or ``()``) is always represented as ``Seq(())`` (:data:`ir.EPSILON`).
Postfix operators map to :class:`Repeat` (``*`` = ``{0,}``, ``+`` = ``{1,}``, ``?`` = ``{0,1}``).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..errors import GrammarError, GrammarSyntaxError
from .ir import EPSILON, MAX_CODE_POINT, Bytes, CharClass, Choice, Expr, Grammar, Repeat, RuleRef, Seq

__all__ = ["parse_ebnf", "make_seq", "make_choice"]

_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789-")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {
    "n": 0x0A,
    "r": 0x0D,
    "t": 0x09,
    "\\": 0x5C,
    '"': 0x22,
    "'": 0x27,
    "[": 0x5B,
    "]": 0x5D,
    "-": 0x2D,
    "/": 0x2F,
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def make_seq(items) -> Expr:
    """Concatenation with light simplification: flatten nested ``Seq``, drop empty literals,
    fuse adjacent ``Bytes``, unwrap a single item; the empty sequence is ``Seq(())``."""
    out: List[Expr] = []
    for item in items:
        t = type(item)  # (exact types: the node kinds are never subclassed)
        if t is not Seq and t is not Bytes:
            out.append(item)
            continue
        for p in (item.items if t is Seq else (item,)):
            if type(p) is Bytes:
                if not p.data:
                    continue
                if out and type(out[-1]) is Bytes:
                    out[-1] = Bytes(out[-1].data + p.data)
                    continue
            out.append(p)
    if not out:
        return EPSILON
    if len(out) == 1:
        return out[0]
    return Seq(tuple(out))


def make_choice(items) -> Expr:
    """Alternation with light simplification: flatten nested ``Choice``, unwrap one item."""
    out: List[Expr] = []
    for item in items:
        if type(item) is Choice:
            out.extend(item.items)
        else:
            out.append(item)
    if len(out) == 1:
        return out[0]
    return Choice(tuple(out))


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.rule: Optional[str] = None  # rule whose body is being parsed
        # rule name -> position of its first reference, per referencing rule
        self.refs: List[Tuple[str, str, int]] = []

    # ------------------------------------------------------------------ positions / errors
    def line_col(self, pos: int) -> Tuple[int, int]:
        line = self.text.count("\n", 0, pos) + 1
        start = self.text.rfind("\n", 0, pos) + 1
        return line, pos - start + 1

    def error(self, message: str, pos: Optional[int] = None) -> GrammarSyntaxError:
        line, col = self.line_col(self.pos if pos is None else pos)
        return GrammarSyntaxError(message, line, col, self.rule)

    def peek(self, off: int = 0) -> str:
        p = self.pos + off
        return self.text[p] if p < self.n else ""

    # ------------------------------------------------------------------ lexical helpers
    def skip_ws(self) -> None:
        text, n, p = self.text, self.n, self.pos
        while p < n:
            c = text[p]
            if c in " \t\r\n":
                p += 1
            elif c == "#":
                nl = text.find("\n", p)
                p = n if nl < 0 else nl + 1
            else:
                break
        self.pos = p

    def name_end(self, p: int) -> int:
        """End of the rule name starting at ``p`` (== p if there is none)."""
        text, n = self.text, self.n
        if p >= n or text[p] not in _NAME_START:
            return p
        q = p + 1
        while q < n and text[q] in _NAME_CHARS:
            q += 1
        return q

    def rule_start_at(self, p: int) -> bool:
        """Whether ``name ::=`` begins at ``p`` (spaces/tabs allowed before ``::=``)."""
        q = self.name_end(p)
        if q == p:
            return False
        while q < self.n and self.text[q] in " \t":
            q += 1
        return self.text.startswith("::=", q)

    # ------------------------------------------------------------------ grammar
    def parse(self, root: str) -> Grammar:
        rules: Dict[str, Expr] = {}
        where: Dict[str, int] = {}
        self.skip_ws()
        if self.pos >= self.n:
            raise self.error("empty grammar: no rule definitions")
        while self.pos < self.n:
            self.rule = None
            start = self.pos
            end = self.name_end(start)
            if end == start:
                c = self.peek()
                if c == ")":
                    raise self.error("unmatched ')'")
                raise self.error(f"expected a rule name, found {c!r}")
            name = self.text[start:end]
            self.pos = end
            while self.peek() in (" ", "\t"):
                self.pos += 1
            if not self.text.startswith("::=", self.pos):
                found = self.peek()
                found = "end of input" if not found else repr(found)
                raise self.error(f"expected '::=' after rule name '{name}', found {found}")
            if name in rules:
                line, col = self.line_col(where[name])
                self.rule = name
                raise self.error(
                    f"duplicate definition of rule '{name}' (first defined at line {line}, column {col})",
                    start,
                )
            self.pos += 3
            self.rule = name
            body = self.parse_choice(nested=False)
            rules[name] = body
            where[name] = start
            self.skip_ws()
            if self.pos < self.n and not self.rule_start_at(self.pos):
                c = self.peek()
                if c == ")":
                    raise self.error("unmatched ')'")
                raise self.error(f"unexpected character {c!r}")
        self.rule = None
        for referrer, ref, pos in self.refs:
            if ref not in rules:
                line, col = self.line_col(pos)
                raise GrammarError(
                    f"rule '{ref}' is referenced but not defined (referenced in rule '{referrer}' "
                    f"at line {line}, column {col})",
                    rule=referrer,
                )
        if root not in rules:
            defined = ", ".join(repr(r) for r in list(rules)[:10])
            raise GrammarError(f"root rule '{root}' is not defined (defined rules: {defined})", rule=root)
        return Grammar(rules, root=root)

    # ------------------------------------------------------------------ expressions
    def parse_choice(self, nested: bool) -> Expr:
        alts = [self.parse_seq(nested)]
        while self.peek() == "|":
            self.pos += 1
            alts.append(self.parse_seq(nested))
        return make_choice(alts)

    def parse_seq(self, nested: bool) -> Expr:
        items: List[Expr] = []
        while True:
            self.skip_ws()
            c = self.peek()
            if not c or c in "|)":
                break
            if c in _NAME_START and self.rule_start_at(self.pos):
                break  # next rule definition begins (an error if nested; caller reports it)
            items.append(self.parse_postfixed())
        return make_seq(items)

    def parse_postfixed(self) -> Expr:
        expr = self.parse_atom()
        while True:
            save = self.pos
            self.skip_ws()
            c = self.peek()
            if c == "*":
                self.pos += 1
                expr = Repeat(expr, 0, None)
            elif c == "+":
                self.pos += 1
                expr = Repeat(expr, 1, None)
            elif c == "?":
                self.pos += 1
                expr = Repeat(expr, 0, 1)
            elif c == "{":
                lo, hi = self.parse_bounds()
                expr = Repeat(expr, lo, hi)
            else:
                self.pos = save
                return expr

    def parse_int(self) -> Optional[int]:
        p = self.pos
        while self.peek().isdigit() and self.peek().isascii():
            self.pos += 1
        return int(self.text[p : self.pos]) if self.pos > p else None

    def parse_bounds(self) -> Tuple[int, Optional[int]]:
        start = self.pos
        self.pos += 1  # '{'
        self.skip_inline_ws()
        lo = self.parse_int()
        self.skip_inline_ws()
        if self.peek() == "}":
            if lo is None:
                raise self.error("empty repetition bounds '{}'", start)
            self.pos += 1
            return lo, lo
        if self.peek() != ",":
            raise self.error("malformed repetition bounds: expected a number, ',' or '}'")
        self.pos += 1
        self.skip_inline_ws()
        hi = self.parse_int()
        self.skip_inline_ws()
        if self.peek() != "}":
            raise self.error("malformed repetition bounds: expected a number or '}'")
        self.pos += 1
        if lo is None and hi is None:
            raise self.error("empty repetition bounds '{,}'", start)
        if lo is None:
            lo = 0
        if hi is not None and hi < lo:
            raise self.error(f"invalid repetition bounds {{{lo},{hi}}}: maximum is less than minimum", start)
        return lo, hi

    def skip_inline_ws(self) -> None:
        while self.peek() in (" ", "\t"):
            self.pos += 1

    def parse_atom(self) -> Expr:
        c = self.peek()
        start = self.pos
        if c == '"':
            return self.parse_string()
        if c == "'":
            raise self.error("single-quoted strings are not supported; use double quotes")
        if c == "[":
            return self.parse_class()
        if c == ".":
            self.pos += 1
            return CharClass((), negated=True)
        if c == "(":
            self.pos += 1
            self.skip_ws()
            if self.peek() == "=":
                raise self.error("lookahead assertions '(= ...)' are not supported", start)
            expr = self.parse_choice(nested=True)
            self.skip_ws()
            if self.peek() != ")":
                line, col = self.line_col(start)
                found = self.peek()
                found = "end of input" if not found else repr(found)
                raise self.error(f"expected ')' to close '(' opened at line {line}, column {col}, found {found}")
            self.pos += 1
            return expr
        if c in _NAME_START:
            end = self.name_end(start)
            name = self.text[start:end]
            self.pos = end
            if name == "TagDispatch" and self.peek() == "(":
                raise self.error("TagDispatch(...) is not supported", start)
            self.refs.append((self.rule, name, start))
            return RuleRef(name)
        if not c:
            raise self.error("unexpected end of input")
        if c in "=:":
            name = self.line_start_name_before(start)
            if name is not None:
                raise self.error(f"expected '::=' after rule name '{name}', found {c!r}")
        raise self.error(f"unexpected character {c!r}")

    def line_start_name_before(self, p: int) -> Optional[str]:
        """The name ending just before ``p`` (spaces allowed) if it is the first thing on its
        line -- i.e. what looks like a rule definition with a malformed ``::=``."""
        text = self.text
        q = p
        while q > 0 and text[q - 1] in " \t":
            q -= 1
        e = q
        while q > 0 and text[q - 1] in _NAME_CHARS:
            q -= 1
        while q < e and text[q] not in _NAME_START:
            q += 1
        if q == e:
            return None
        b = q
        while b > 0 and text[b - 1] in " \t":
            b -= 1
        if b > 0 and text[b - 1] != "\n":
            return None
        return text[q:e]

    # ------------------------------------------------------------------ literals
    def parse_escape(self, in_class: bool) -> int:
        """Parse an escape sequence at ``pos`` (a backslash); return its code point."""
        start = self.pos
        c = self.peek(1)
        if c in _SIMPLE_ESCAPES:
            self.pos += 2
            return _SIMPLE_ESCAPES[c]
        if in_class and c == "^":
            self.pos += 2
            return 0x5E
        if c in _HEX_ESCAPES:
            width = _HEX_ESCAPES[c]
            digits = self.text[start + 2 : start + 2 + width]
            if len(digits) != width or any(d not in _HEX for d in digits):
                raise self.error(f"invalid escape '\\{c}': expected {width} hex digits", start)
            cp = int(digits, 16)
            if cp > MAX_CODE_POINT:
                raise self.error(f"escape '\\{c}{digits}' is beyond U+10FFFF", start)
            self.pos = start + 2 + width
            return cp
        if not c:
            raise self.error("unexpected end of input after '\\'", start)
        shown = c if c.isprintable() else f"\\x{ord(c):02x}"
        raise self.error(f"invalid escape sequence '\\{shown}'", start)

    def parse_string(self) -> Expr:
        start = self.pos
        self.pos += 1
        out = []
        text = self.text
        while True:
            if self.pos >= self.n or text[self.pos] == "\n":
                raise self.error("unterminated string literal", start)
            c = text[self.pos]
            if c == '"':
                self.pos += 1
                break
            if c == "\\":
                esc = self.pos
                cp = self.parse_escape(in_class=False)
                if 0xD800 <= cp <= 0xDFFF:
                    raise self.error(f"surrogate code point U+{cp:04X} in a string literal", esc)
                out.append(chr(cp))
            else:
                out.append(c)
                self.pos += 1
        data = "".join(out).encode("utf-8", "surrogatepass")
        return Bytes(data) if data else EPSILON

    def class_char(self, start: int) -> int:
        c = self.peek()
        if not c or c == "\n":
            raise self.error("unterminated character class", start)
        if c == "\\":
            return self.parse_escape(in_class=True)
        self.pos += 1
        return ord(c)

    def parse_class(self) -> Expr:
        start = self.pos
        self.pos += 1
        negated = False
        if self.peek() == "^":
            negated = True
            self.pos += 1
        ranges = []
        while True:
            c = self.peek()
            if c == "]":
                self.pos += 1
                break
            item_pos = self.pos
            lo = self.class_char(start)
            hi = lo
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                hi = self.class_char(start)
                if hi < lo:
                    raise self.error(
                        f"invalid character range {_show_cp(lo)}-{_show_cp(hi)}: end is before start",
                        item_pos,
                    )
            ranges.append((lo, hi))
        return CharClass(tuple(ranges), negated=negated)


def _show_cp(cp: int) -> str:
    ch = chr(cp)
    if ch.isprintable() and not (0xD800 <= cp <= 0xDFFF):
        return repr(ch)
    return f"U+{cp:04X}"


def parse_ebnf(text: str, root_rule_name: str = "root") -> Grammar:
    """Parse GBNF / XGrammar-dialect EBNF ``text`` into a :class:`Grammar`.

    Raises :class:`GrammarSyntaxError` (with 1-based ``line``/``column``) on malformed text and
    :class:`GrammarError` for an undefined rule reference or a missing root rule.

    Example::

        >>> g = parse_ebnf('root ::= "a" b*\\nb ::= [0-9]')
        >>> print(g)
        root ::= "a" b*
        b ::= [0-9]
    """
    if not isinstance(text, str):
        raise TypeError(f"grammar text must be str, not {type(text).__name__}")
    return _Parser(text).parse(root_rule_name)
