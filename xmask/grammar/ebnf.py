"""GBNF (llama.cpp) / XGrammar EBNF parser -> :class:`~xmask.grammar.ir.Grammar`.

Syntax accepted::

    # comment to end of line
    name ::= expr                 names: [a-zA-Z_][a-zA-Z0-9_-]* (and a.b when defined)
    name[max_chars=5] ::= expr    rule attributes (max_chars, max_tokens, temperature, capture)
    name ::= expr (= expr)        a lookahead assertion ends a rule body
    expr  := alt ("|" alt)*       empty alternatives allowed ("ws ::= | \" \"")
    alt   := postfixed*
    postfixed := atom ("*" | "+" | "?" | "{m}" | "{m,}" | "{m,n}" | "{,n}" | "{m, -1}")*
    atom  := "string" | [class] | [^class] | . | ( expr ) | rule-name | builtin(...)
    builtin := Regex | Substring | Token | ExcludeToken | TagDispatch | TokenTagDispatch

A rule body may span several lines: it ends where the next ``name ::=`` begins (on one line)
or at the end of the text.  String and class escapes: ``\\n \\r \\t \\b \\f \\a \\v \\e
\\0 \\? \\\\ \\" \\' \\[ \\] \\- \\/ \\xHH \\uHHHH \\UHHHHHHHH`` (classes also ``\\^ \\$ \\. \\* \\+
\\( \\) \\{ \\} \\|``); every escape denotes a *code point*, and literals are encoded as
UTF-8.  ``.`` is any character.  ``\\x`` takes exactly two hex digits, as in GBNF and as
XGrammar *prints* it (XGrammar 0.2.8's parser reads ``\\x`` greedily, so its own printout
``"\\xe9a"`` of ``"éa"`` reads back there as U+0E9A; xmask reads it as ``"éa"``).

XGrammar extensions (see :mod:`~xmask.grammar.ebnf_builtins`,
:mod:`~xmask.grammar.lookahead`, :mod:`~xmask.grammar.rule_attributes`): the built-in atoms
are parsed into IR; a lookahead is dropped, as it never changes the language in XGrammar
(a matching hint there; see :mod:`~xmask.grammar.lookahead`); ``max_chars`` /
``max_tokens`` are lowered exactly to bounded rules, or (``max_tokens`` over text) kept as
``Grammar.budgets`` that the matcher enforces; ``temperature`` does not change the language and is ignored.  Single-quoted
strings are rejected (as in XGrammar).

The result is lightly simplified: nested sequences / alternations are flattened, single-item
sequences and alternations unwrapped, adjacent literals fused, and the empty string (an empty
alternative, ``""`` or ``()``) is always represented as ``Seq(())`` (:data:`ir.EPSILON`).
Postfix operators map to :class:`Repeat` (``*`` = ``{0,}``, ``+`` = ``{1,}``, ``?`` = ``{0,1}``).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .._recursion import deep_recursion
from ..errors import GrammarError, GrammarSyntaxError
from .ebnf_builtins import BUILTINS, TokenTagDispatchSpec, parse_builtin
from .ir import (EPSILON, MAX_CODE_POINT, Bytes, CharClass, Expr, Grammar, Repeat, RuleRef, iter_refs,
                 make_choice, make_seq)

__all__ = ["parse_ebnf", "parse_ebnf_with_lookaheads", "make_seq", "make_choice"]

_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789-")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {
    "n": 0x0A,
    "r": 0x0D,
    "t": 0x09,
    "b": 0x08,
    "f": 0x0C,
    "a": 0x07,
    "v": 0x0B,
    "e": 0x1B,
    "0": 0x00,
    "?": 0x3F,
    "\\": 0x5C,
    '"': 0x22,
    "'": 0x27,
    "[": 0x5B,
    "]": 0x5D,
    "-": 0x2D,
    "/": 0x2F,
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_ANY_DEF = re.compile(r"^[ \t]*([a-zA-Z_][a-zA-Z0-9_.-]*)(?:\[[^\]\n]*\])?[ \t]*::=", re.M)
_DOTTED_DEF = re.compile(r"^[ \t]*([a-zA-Z_][a-zA-Z0-9_-]*(?:\.[a-zA-Z0-9_-]+)+)(?:\[[^\]\n]*\])?[ \t]*::=", re.M)
# XGrammar also lets a class escape its other metacharacters
_CLASS_ESCAPES = {c: ord(c) for c in "^$.*+?(){}|"}
_RULE_ATTRIBUTES = ("max_chars", "max_tokens", "temperature")


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.rule: Optional[str] = None  # rule whose body is being parsed
        # rule name -> position of its first reference, per referencing rule
        self.refs: List[Tuple[str, str, int]] = []
        # dotted names defined in the text (``a.b ::=``), which references may use
        self.dotted = frozenset(m.group(1) for m in _DOTTED_DEF.finditer(text))
        self.helper_rules: Dict[str, Expr] = {}  # rules the built-in atoms generate
        self.namer = None  # RuleNamer over every name defined in the text (made on demand)
        self.defined = frozenset()  # the names defined in the text (set with the namer)
        self.dispatches: Dict[str, object] = {}  # generated rule -> TagDispatch spec
        self.lookaheads: Dict[str, Tuple[Expr, int]] = {}
        self.attributes: Dict[str, Dict[str, Tuple[object, int]]] = {}
        self.captures: Dict[str, str] = {}  # rule -> capture name
        self.special_texts: frozenset = frozenset()  # see parse_ebnf

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
        """End of the rule name starting at ``p`` (== p if there is none).  XGrammar allows
        dots inside names (``a.b``); GBNF's ``.`` is any character, so a dotted name is only
        taken when it is defined in the text (``a.b ::= ...``)."""
        text, n = self.text, self.n
        if p >= n or text[p] not in _NAME_START:
            return p
        q = p + 1
        while q < n and text[q] in _NAME_CHARS:
            q += 1
        if q < n and text[q] == "." and self.dotted:
            r = q
            while r < n and text[r] == "." and r + 1 < n and text[r + 1] in _NAME_CHARS:
                r += 2
                while r < n and text[r] in _NAME_CHARS:
                    r += 1
                if text[p:r] in self.dotted:
                    q = r
        return q

    def attributes_end(self, q: int) -> int:
        """End of a ``[key=value, ...]`` rule attribute list starting at ``q`` (== q if none)."""
        if not self.text.startswith("[", q):
            return q
        close = self.text.find("]", q)
        nl = self.text.find("\n", q)
        if close < 0 or (0 <= nl < close) or (
                "=" not in self.text[q:close] and "capture" not in self.text[q:close]):
            return q
        return close + 1

    def rule_start_at(self, p: int) -> bool:
        """Whether ``name ::=`` (or ``name[attrs] ::=``) begins at ``p`` (spaces/tabs allowed
        before ``::=``)."""
        q = self.name_end(p)
        if q == p:
            return False
        q = self.attributes_end(q)
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
            attrs = self.parse_attributes(name) if self.peek() == "[" else None
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
            if attrs:
                self.attributes[name] = attrs
            self.skip_ws()
            if self.text.startswith("(=", self.pos):
                self.lookaheads[name] = (self.parse_lookahead(), where[name])
                self.skip_ws()
                if self.pos < self.n and not self.rule_start_at(self.pos):
                    raise self.error("a lookahead assertion '(= ...)' must end its rule body")
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
        rules.update(self.helper_rules)
        return self.finish(rules, root)

    def finish(self, rules: Dict[str, Expr], root: str) -> Grammar:
        """Lower what has no IR node of its own (TagDispatch, rule attributes); lookaheads are
        dropped: in XGrammar they never change the language (see xmask.grammar.lookahead)."""
        budgets: Dict[str, int] = {}
        if self.dispatches:
            from .ebnf_lowering import lower_dispatch

            self.bound_free_text(rules)
            self.fresh_rule("rule")  # makes self.namer
            for name, spec in self.dispatches.items():
                try:
                    lower_dispatch(rules, name, spec, self.namer, self.special_texts)
                except GrammarError as e:
                    line, col = self.line_col(spec.pos)
                    raise GrammarError(f"{e.args[0]} (dispatch at line {line}, column {col})", rule=e.rule) from None
        if self.attributes:
            from .rule_attributes import apply_rule_attributes

            apply_rule_attributes(rules, self.attributes, self.fresh_rule, self.line_col, budgets)
        if self.dispatches or self.attributes:
            _drop_unreachable_generated(rules, root, self.defined)
        return Grammar(rules, root=root, captures=self.captures, budgets=budgets)

    def bound_free_text(self, rules: Dict[str, Expr]) -> None:
        """``name[max_chars=n] ::= TagDispatch(excludes=...)`` with no trigger (XGrammar's
        printout of a structural tag's ``any_text``): the free-text builder bounds it directly,
        in fewer states than the generic unfolding of :mod:`rule_attributes`."""
        for rule, attrs in list(self.attributes.items()):
            body = rules[rule]
            spec = self.dispatches.get(body.name) if type(body) is RuleRef else None
            if spec is None or spec.pairs or "max_chars" not in attrs or "max_tokens" in attrs:
                continue
            if isinstance(spec, TokenTagDispatchSpec):
                continue  # a token budget over whole tokens: left to rule_attributes (it raises)
            spec.max_chars = attrs["max_chars"][0]
            del attrs["max_chars"]
            if not attrs:
                del self.attributes[rule]

    # ------------------------------------------------------------------ extensions
    def fresh_rule(self, hint: str) -> str:
        """A rule name used nowhere in the text (nor handed out before)."""
        if self.namer is None:
            from .combine import RuleNamer

            taken = {m.group(1): EPSILON for m in _ANY_DEF.finditer(self.text)}
            self.defined = frozenset(taken)
            self.namer = RuleNamer(taken)
        return self.namer.fresh(hint)

    def add_rule(self, name: str, expr: Expr) -> None:
        self.helper_rules[name] = expr

    def note_ref(self, name: str, pos: int) -> None:
        self.refs.append((self.rule, name, pos))

    def add_dispatch(self, spec) -> Expr:
        name = self.fresh_rule(f"{self.rule or 'rule'}_dispatch")
        self.dispatches[name] = spec
        self.helper_rules[name] = EPSILON  # replaced by the lowering
        return RuleRef(name)

    def parse_attributes(self, name: str) -> Dict[str, Tuple[object, int]]:
        """``[key=value, ...]`` after a rule name (XGrammar's rule attributes)."""
        attrs: Dict[str, Tuple[object, int]] = {}
        self.pos += 1
        while True:
            self.skip_inline_ws()
            start = self.pos
            end = self.name_end(start)
            key = self.text[start:end]
            if key == "capture":  # ``[capture]`` / ``[capture="name"]``: see Grammar.captures
                self.pos = end
                self.parse_capture(name, start)
                if self.comma_or_close("]", "in rule attributes"):
                    return attrs
                continue
            if key not in _RULE_ATTRIBUTES:
                shown = repr(key) if key else repr(self.peek())
                raise self.error(
                    f"unknown rule attribute {shown} on rule '{name}' (known: {', '.join(_RULE_ATTRIBUTES)})", start)
            if key in attrs:
                raise self.error(f"rule attribute '{key}' is given twice on rule '{name}'", start)
            self.pos = end
            self.skip_inline_ws()
            if self.peek() != "=":
                raise self.error(f"expected '=' after rule attribute '{key}'")
            self.pos += 1
            self.skip_inline_ws()
            vstart = self.pos
            while self.peek() not in ("", ",", "]", "\n") and not self.peek().isspace():
                self.pos += 1
            raw = self.text[vstart:self.pos]
            try:
                value = float(raw) if key == "temperature" else int(raw)
            except ValueError:
                kind = "a number" if key == "temperature" else "an integer"
                raise self.error(f"rule attribute '{key}' needs {kind}, found {raw!r}", vstart) from None
            if value < 0 or value != value or value == float("inf"):
                raise self.error(f"rule attribute '{key}' must be finite and non-negative, found {raw}", vstart)
            attrs[key] = (value, start)
            self.skip_inline_ws()
            if self.comma_or_close("]", "in rule attributes"):
                return attrs

    def parse_capture(self, rule: str, start: int) -> None:
        if rule in self.captures:
            raise self.error(f"rule attribute 'capture' is given twice on rule '{rule}'", start)
        self.skip_inline_ws()
        name = rule
        if self.peek() == "=":
            self.pos += 1
            self.skip_inline_ws()
            if self.peek() != '"':
                raise self.error("rule attribute 'capture' needs a quoted name, as "
                                 'capture="name"')
            name = self.parse_string_text()
        self.captures[rule] = name
        self.skip_inline_ws()

    def parse_lookahead(self) -> Expr:
        """``(= expr)`` after a rule body: what must follow the rule (checked, then dropped)."""
        start = self.pos
        self.pos += 2
        expr = self.parse_choice(nested=True)
        self.skip_ws()
        if self.peek() != ")":
            line, col = self.line_col(start)
            raise self.error(f"expected ')' to close the lookahead '(=' opened at line {line}, column {col}")
        self.pos += 1
        return expr

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
            if c == "(" and self.peek(1) == "=":
                if nested:
                    raise self.error("a lookahead assertion '(= ...)' may only end a rule body")
                break
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
        if self.text.startswith("-1", self.pos):  # XGrammar prints {m, -1} for {m,}
            self.pos += 2
            self.skip_inline_ws()
            if self.peek() != "}" or lo is None:
                raise self.error("malformed repetition bounds: '-1' (unbounded) must follow a minimum")
            self.pos += 1
            return lo, None
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

    def comma_or_close(self, close: str, where: str) -> bool:
        """After an item of a comma-separated list: consume ``,`` (False: more items follow) or
        ``close`` (True: the list ended); anything else is a syntax error naming ``where``."""
        c = self.peek()
        if c == "," or c == close:
            self.pos += 1
            return c == close
        found = repr(c) if c else "end of input"
        raise self.error(f"expected ',' or '{close}' {where}, found {found}")

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
            if name in BUILTINS and self.text.startswith("(", end):
                return parse_builtin(self, name)
            self.pos = end
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
        if in_class and c in _CLASS_ESCAPES:
            self.pos += 2
            return _CLASS_ESCAPES[c]
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
        data = self.parse_string_text().encode("utf-8", "surrogatepass")
        return Bytes(data) if data else EPSILON

    def parse_string_text(self) -> str:
        """A double-quoted literal at ``pos`` as text (escapes resolved)."""
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
                if "\ud800" <= c <= "\udfff":  # as the escaped form: no UTF-8 spells it
                    raise self.error(f"surrogate code point U+{ord(c):04X} in a string literal",
                                     self.pos)
                out.append(c)
                self.pos += 1
        return "".join(out)

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


def _drop_unreachable_generated(rules: Dict[str, Expr], root: str, defined) -> None:
    """Remove the helper rules that lowering left unused (the text's own rules all stay)."""
    seen = {root}
    stack = [root]
    while stack:
        for ref in iter_refs(rules[stack.pop()]):
            if ref not in seen:
                seen.add(ref)
                stack.append(ref)
    for name in [n for n in rules if n not in seen and n not in defined]:
        del rules[name]


def _show_cp(cp: int) -> str:
    ch = chr(cp)
    if ch.isprintable() and not (0xD800 <= cp <= 0xDFFF):
        return repr(ch)
    return f"U+{cp:04X}"


def parse_ebnf(text: str, root_rule_name: str = "root", special_texts=frozenset()) -> Grammar:
    """Parse GBNF / XGrammar-dialect EBNF ``text`` into a :class:`Grammar`.

    ``special_texts`` (the compiler passes its tokenizer's special-token texts): a
    ``TagDispatch`` trigger equal to one of them may also come as one whole literal after
    clean free text, so the compiler lets that special token fire it (same language).

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
    parser = _Parser(text)
    parser.special_texts = frozenset(special_texts)
    with deep_recursion("EBNF grammar"):  # (the parser recurses on nesting)
        return parser.parse(root_rule_name)


def parse_ebnf_with_lookaheads(text: str, root_rule_name: str = "root") -> Tuple[Grammar, Dict[str, Expr]]:
    """:func:`parse_ebnf`, plus the lookahead assertions it dropped (rule name -> lookahead),
    e.g. to check them with :func:`xmask.grammar.lookahead.lookahead_implied`.

    Example::

        >>> g, la = parse_ebnf_with_lookaheads('root ::= a "b"\\na ::= "x" (= "b")')
        >>> la
        {'a': Bytes(data=b'b')}
    """
    if not isinstance(text, str):
        raise TypeError(f"grammar text must be str, not {type(text).__name__}")
    parser = _Parser(text)
    grammar = parser.parse(root_rule_name)
    return grammar, {rule: expr for rule, (expr, _) in parser.lookaheads.items()}
