"""Lark grammar text -> definitions (expression trees with unresolved names).

The syntax read and the errors raised are described in :mod:`xmask.grammar.lark`, which turns
the definitions into grammar IR.  Leaves that need no name resolution (literals, regexes,
special tokens, ``%json`` / ``@name`` grammars) are already IR here.

Example::

    >>> p = LarkParser('start: "a" B\\nB: /[0-9]/', None, None, None)
    >>> p.parse()
    >>> sorted(p.defs), p.defs["B"].terminal
    (['B', 'start'], True)

Tree nodes: ``("leaf", expr, pos)`` a terminal-level leaf; ``("name", name, pos)``;
``("seq", items)``; ``("alt", items)``; ``("rep", node, lo, hi)``; ``("token", TokenSet,
pos)``; ``("embed", Grammar, hint, pos)`` for ``%json`` and ``@name``.
"""

from __future__ import annotations

import bisect
import json
from typing import Callable, Dict, List, Optional, Tuple

from .._caller_warning import warn_from_caller
from ..errors import GrammarSyntaxError, RegexSyntaxError, XmaskError
from .ir import Bytes, CharClass, EPSILON, Expr, Grammar, TokenSet, make_choice, make_seq
from .json_schema import json_schema_to_grammar
from .lark_terminals import LarkRegexError, common_terminal, fold_case, lark_regex

__all__ = ["Definition", "LarkParser", "is_terminal_name"]

_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "/": "/", "n": "\n", "r": "\r", "t": "\t", "f": "\f"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_WARNED_ATTRS = frozenset({"temperature"})
_STOP_ATTRS = frozenset({"stop", "suffix"})
_LIMIT_ATTRS = frozenset({"max_tokens", "max_chars"})
_MAX_REPEAT = 10_000


def is_terminal_name(name: str) -> bool:
    """Upper-case names (after leading underscores) are terminals."""
    stripped = name.lstrip("_")
    return bool(stripped) and stripped[0].isupper()


class Definition:
    """One ``name: body`` (``terminal``: an upper-case name); ``pos`` is the name's offset.
    ``lazy``: the rule matches its body's shortest match (``[lazy]``, ``[stop=X]`` and
    ``[suffix=X]``, whose ``X`` tree is in ``stop``).  ``limits``: ``max_tokens`` /
    ``max_chars`` attributes, kind -> (n, offset of the attribute)."""

    __slots__ = ("name", "body", "pos", "terminal", "lazy", "stop", "capture", "limits")

    def __init__(self, name: str, body, pos: int, terminal: bool):
        self.name, self.body, self.pos, self.terminal = name, body, pos, terminal
        self.lazy = False
        self.stop = None
        self.capture: Optional[str] = None  # ``[capture]`` / ``[capture="name"]``
        self.limits: Dict[str, Tuple[int, int]] = {}


class LarkParser:
    """Reads Lark text into ``defs`` (name -> :class:`Definition`, in order) and ``ignores``
    (``%ignore`` trees with their offsets).  ``resolve_token(text, pos)`` and
    ``check_token_id(id, pos)`` (None without a tokenizer) handle special tokens;
    ``named(name, pos)`` returns the ``Grammar`` of ``@name``."""

    def __init__(self, text: str, resolve_token: Optional[Callable[[str, int], int]],
                 check_token_id: Optional[Callable[[int, int], None]],
                 named: Optional[Callable[[str, int], Grammar]]):
        self.text = text
        self.pos = 0
        self.n = len(text)
        self.line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        self.resolve_token = resolve_token
        self.check_token_id = check_token_id
        self.named = named
        self.defs: Dict[str, Definition] = {}
        self.ignores: List[Tuple[object, int]] = []

    # ------------------------------------------------------------------ positions, errors

    def line_col(self, pos: int) -> Tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, pos)
        return line, pos - self.line_starts[line - 1] + 1

    def error(self, message: str, pos: Optional[int] = None) -> GrammarSyntaxError:
        line, col = self.line_col(self.pos if pos is None else pos)
        return GrammarSyntaxError(f"Lark: {message}", line=line, column=col)

    def peek(self, off: int = 0) -> str:
        p = self.pos + off
        return self.text[p] if p < self.n else ""

    def startswith(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    # ------------------------------------------------------------------ whitespace

    def skip_comment(self) -> bool:
        if self.peek() == "#" or self.startswith("//"):
            while self.pos < self.n and self.text[self.pos] != "\n":
                self.pos += 1
            return True
        return False

    def skip_inline(self) -> None:
        while self.pos < self.n:
            c = self.text[self.pos]
            if c in " \t\r\f":
                self.pos += 1
            elif not self.skip_comment():
                return

    def skip_all(self) -> None:
        while True:
            self.skip_inline()
            if self.peek() != "\n":
                return
            self.pos += 1

    def skip_ws(self, depth: int) -> None:
        """Skip blanks; at depth 0 a newline ends the definition unless the next non-blank
        line starts with ``|`` (Lark's continuation lines)."""
        if depth:
            self.skip_all()
            return
        self.skip_inline()
        if self.peek() == "\n":
            save = self.pos
            self.skip_all()
            if self.peek() != "|":
                self.pos = save

    def at_item_end(self) -> bool:
        return self.pos >= self.n or self.peek() == "\n"

    def end_item(self) -> None:
        self.skip_inline()
        if not self.at_item_end():
            raise self.error(f"unexpected {self.peek()!r}")

    # ------------------------------------------------------------------ items

    def parse(self) -> None:
        while True:
            self.skip_all()
            if self.pos >= self.n:
                return
            if self.peek() == "%":
                self.parse_directive()
            else:
                self.parse_definition()
            self.end_item()

    def read_name(self, what: str = "name") -> str:
        start = self.pos
        if self.peek() not in _NAME_START:
            raise self.error(f"expected {what}")
        while self.pos < self.n:
            c = self.text[self.pos]
            if c in _NAME_CHARS or (c == "-" and self.peek(1) in _NAME_CHARS):
                self.pos += 1
            else:
                break
        return self.text[start:self.pos]

    def read_int(self, signed: bool = False) -> int:
        start = self.pos
        if signed and self.peek() in "+-":
            self.pos += 1
        while self.peek().isdigit() and self.peek().isascii():
            self.pos += 1
        digits = self.text[start:self.pos]
        if not digits.lstrip("+-"):
            raise self.error("expected a number", start)
        return int(digits)

    def parse_definition(self) -> None:
        while self.peek() in ("?", "!"):  # tree-shaping modifiers
            self.pos += 1
        name_pos = self.pos
        name = self.read_name("rule or terminal name")
        if name in self.defs:
            raise self.error(f"duplicate definition of '{name}'", name_pos)
        terminal = is_terminal_name(name)
        definition = Definition(name, None, name_pos, terminal)
        while True:
            self.skip_inline()
            c = self.peek()
            if c == "{":
                raise self.error("Lark templates are not supported")
            if c == ".":
                self.pos += 1
                self.read_int(signed=True)
                warn_from_caller(f"Lark: priority of '{name}' ignored (priorities choose "
                                 "between parse trees; they do not change the language)")
            elif c == "[" and not terminal:
                self.parse_attributes(definition)
            else:
                break
        if self.peek() != ":":
            raise self.error(f"expected ':' after '{name}'")
        self.pos += 1
        definition.body = self.parse_alts(0, terminal)
        self.defs[name] = definition

    def parse_attributes(self, definition: Definition) -> None:
        name = definition.name
        self.pos += 1
        while True:
            self.skip_all()
            if self.peek() == "]":
                self.pos += 1
                return
            attr_pos = self.pos
            attr = self.read_name("attribute name")
            self.skip_all()
            if attr in _STOP_ATTRS:
                if self.peek() != "=":
                    raise self.error(f"attribute '{attr}' needs a value", attr_pos)
                self.pos += 1
                self.skip_all()
                if self.startswith('""'):
                    raise self.error(f"{attr}=\"\" (stop at the end-of-sequence token) is not "
                                     "supported", attr_pos)
                definition.lazy = True
                definition.stop = self.parse_atom(1, True)
            elif attr in _LIMIT_ATTRS:
                if self.peek() != "=":
                    raise self.error(f"attribute '{attr}' needs a value", attr_pos)
                self.pos += 1
                self.skip_all()
                definition.limits[attr] = (self.read_int(), attr_pos)
            elif attr == "lazy":
                definition.lazy = True
            elif attr == "capture":
                definition.capture = name
                if self.peek() == "=":
                    self.pos += 1
                    self.skip_all()
                    if self.peek() != '"':
                        raise self.error('attribute \'capture\' needs a quoted name, as capture="x"',
                                         attr_pos)
                    definition.capture = self.read_string_text()
            elif self.peek() == "=":
                self.pos += 1
                self.skip_all()
                if self.peek() == '"':
                    self.read_string_text()
                elif self.peek() == "/":
                    self.read_regex_text()
                else:
                    while self.pos < self.n and self.peek() not in ",] \t\n":
                        self.pos += 1
            if attr in _WARNED_ATTRS:
                warn_from_caller(f"Lark: attribute '{attr}' of '{name}' ignored (xmask computes "
                                 "masks, it does not sample)")
            elif attr not in _STOP_ATTRS | _LIMIT_ATTRS | {"lazy", "capture"}:
                raise self.error(f"rule attribute '{attr}' is not supported", attr_pos)
            self.skip_all()
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "]":
                raise self.error("expected ',' or ']' in rule attributes")

    def parse_directive(self) -> None:
        start = self.pos
        self.pos += 1
        word = self.read_name("directive name")
        if word == "ignore":
            self.skip_inline()
            self.ignores.append((self.parse_alts(0, True), start))
        elif word == "import":
            self.parse_import(start)
        else:
            raise self.error(f"directive %{word} is not supported", start)

    def parse_import(self, start: int) -> None:
        self.skip_inline()
        path_pos = self.pos
        if self.peek() == ".":
            raise self.error("relative imports are not supported (only %import common.NAME)")
        module = self.read_name("module name")
        if module != "common":
            raise self.error(f"cannot import from '{module}': only Lark's 'common' module is "
                             "available", path_pos)
        pairs: List[Tuple[str, str, int]] = []
        if self.peek() == ".":
            self.pos += 1
            name_pos = self.pos
            name = self.read_name("terminal name")
            alias = name
            self.skip_inline()
            if self.startswith("->"):
                self.pos += 2
                self.skip_inline()
                alias = self.read_name("alias name")
            pairs.append((name, alias, name_pos))
        else:
            self.skip_inline()
            if self.peek() != "(":
                raise self.error("expected '.NAME' or '(NAME, ...)' after %import common")
            self.pos += 1
            while True:
                self.skip_all()
                name_pos = self.pos
                name = self.read_name("terminal name")
                pairs.append((name, name, name_pos))
                self.skip_all()
                if self.peek() == ",":
                    self.pos += 1
                elif self.peek() == ")":
                    self.pos += 1
                    break
                else:
                    raise self.error("expected ',' or ')'")
        for name, alias, name_pos in pairs:
            try:
                expr = common_terminal(name)
            except KeyError:
                raise self.error(f"unknown common import 'common.{name}'", name_pos) from None
            if not is_terminal_name(alias):
                raise self.error(f"import alias '{alias}' must be a terminal (upper-case) name",
                                 name_pos)
            if alias in self.defs:
                raise self.error(f"duplicate definition of '{alias}'", name_pos)
            self.defs[alias] = Definition(alias, ("leaf", expr, name_pos), start, True)

    # ------------------------------------------------------------------ expressions

    def parse_alts(self, depth: int, terminal: bool):
        items = [self.parse_alias(depth, terminal)]
        while True:
            self.skip_ws(depth)
            if self.peek() != "|":
                break
            self.pos += 1
            items.append(self.parse_alias(depth, terminal))
        return items[0] if len(items) == 1 else ("alt", items)

    def parse_alias(self, depth: int, terminal: bool):
        seq = self.parse_seq(depth, terminal)
        self.skip_ws(depth)
        if self.startswith("->"):
            self.pos += 2
            self.skip_inline()
            self.read_name("alias name")  # tree shaping only
        return seq

    def parse_seq(self, depth: int, terminal: bool):
        items = []
        while True:
            self.skip_ws(depth)
            c = self.peek()
            if (not c or c in "|)]}\n" or self.startswith("->")):
                break
            items.append(self.parse_postfix(depth, terminal))
        return items[0] if len(items) == 1 else ("seq", items)

    def parse_postfix(self, depth: int, terminal: bool):
        node = self.parse_atom(depth, terminal)
        while True:
            save = self.pos
            self.skip_inline()
            c = self.peek()
            if c in ("?", "*", "+"):
                self.pos += 1
                lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[c]
            elif c == "~":
                op = self.pos
                self.pos += 1
                self.skip_inline()
                lo = hi = self.read_int()
                if self.startswith(".."):
                    self.pos += 2
                    hi = self.read_int()
                lo, hi = self.check_bounds(lo, hi, op)
            elif c == "{":
                lo, hi = self.parse_braces()
            else:
                self.pos = save
                return node
            node = ("rep", node, lo, hi)

    def check_bounds(self, lo: int, hi: Optional[int], pos: int):
        if hi is not None and hi < lo:
            raise self.error(f"repetition {lo}..{hi}: the end is smaller than the start", pos)
        if lo > _MAX_REPEAT or (hi is not None and hi > _MAX_REPEAT):
            raise self.error(f"repetition bound above {_MAX_REPEAT}", pos)
        return lo, hi

    def parse_braces(self):
        op = self.pos
        self.pos += 1
        self.skip_inline()
        lo = self.read_int() if self.peek().isdigit() else None
        self.skip_inline()
        if self.peek() == ",":
            self.pos += 1
            self.skip_inline()
            hi = self.read_int() if self.peek().isdigit() else None
        else:
            if lo is None:
                raise self.error("expected a repetition count in '{...}'")
            hi = lo
        self.skip_inline()
        if self.peek() != "}":
            raise self.error("expected '}'")
        self.pos += 1
        return self.check_bounds(0 if lo is None else lo, hi, op)

    def parse_atom(self, depth: int, terminal: bool):
        start = self.pos
        c = self.peek()
        if c == "(" or c == "[":
            self.pos += 1
            inner = self.parse_alts(depth + 1, terminal)
            self.skip_all()
            close = ")" if c == "(" else "]"
            if self.peek() != close:
                raise self.error(f"expected '{close}' to close the '{c}' at "
                                 "line {}, column {}".format(*self.line_col(start)))
            self.pos += 1
            return inner if c == "(" else ("rep", inner, 0, 1)
        if c == '"':
            return self.parse_string_atom()
        if c == "/":
            pattern, flags = self.read_regex_text()
            try:
                return ("leaf", lark_regex(pattern, flags), start)
            except LarkRegexError as e:
                where = start if e.offset is None else start + 1 + e.offset
                raise self.error(str(e), where) from None
            except RegexSyntaxError as e:
                raise self.error(f"bad regex: {e}", start + 1 + e.position) from None
        if c == "<":
            if terminal:
                raise self.error("special tokens cannot be used in terminals")
            return ("token", self.parse_special_token(), start)
        if c == "@":
            if terminal:
                raise self.error("@grammar references cannot be used in terminals")
            self.pos += 1
            name = self.read_name_or_digits()
            return ("embed", self.named(name, start), name, start)
        if c == "%":
            return self.parse_inline_directive(terminal)
        if c in _NAME_START:
            name = self.read_name()
            if self.peek() == "{":
                raise self.error("Lark templates are not supported", start)
            return ("name", name, start)
        raise self.error(f"expected a grammar expression, found {c!r}" if c else
                         "expected a grammar expression, found the end of the text")

    def read_name_or_digits(self) -> str:
        if self.peek().isdigit():
            return str(self.read_int())
        return self.read_name("grammar name")

    def parse_inline_directive(self, terminal: bool):
        start = self.pos
        self.pos += 1
        word = self.read_name("directive name")
        self.skip_all()
        value_pos = self.pos
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
        except json.JSONDecodeError as e:
            raise self.error(f"%{word}: bad JSON: {e.msg}", e.pos) from None
        self.pos = end
        if word == "json":
            if terminal:
                raise self.error("%json cannot be used in terminals", start)
            if not isinstance(value, (dict, bool)):
                raise self.error("%json needs a JSON schema (an object or a boolean)", value_pos)
            try:
                schema = json_schema_to_grammar(value)
            except XmaskError as e:  # the schema's own error, placed in the Lark text
                raise self.error(f"%json: {e}", value_pos) from e
            return ("embed", schema, "json", start)
        if word == "regex":
            return ("leaf", self.structured_regex(value, value_pos), start)
        raise self.error(f"%{word} is not supported inside an expression", start)

    def structured_regex(self, value, pos: int) -> Expr:
        if not isinstance(value, dict) or len(value) != 1:
            raise self.error('%regex needs an object with one key, e.g. {"substring_chunks": '
                             '[...]}', pos)
        (key, arg), = value.items()
        if key == "substring_chunks" and isinstance(arg, list) and all(
                isinstance(x, str) for x in arg):
            chunks = arg
        elif key == "substring_chars" and isinstance(arg, str):
            chunks = list(arg)
        else:
            raise self.error(f"%regex {{{json.dumps(key)}: ...}} is not supported (supported: "
                             "substring_chunks with a list of strings, substring_chars with a "
                             "string)", pos)
        # any contiguous run chunks[i:j]: empty, or chunks[i] then a prefix of chunks[i+1:]
        starts: List[Expr] = []
        prefix: Expr = EPSILON  # a prefix of chunks[i+1:]
        for chunk in reversed(chunks):
            start = make_seq([Bytes(chunk.encode("utf-8")), prefix])
            starts.append(start)
            prefix = make_choice([EPSILON, start])
        return make_choice([EPSILON] + starts[::-1])

    # ------------------------------------------------------------------ literals

    def read_string_text(self) -> str:
        start = self.pos
        self.pos += 1
        out: List[str] = []
        while True:
            c = self.peek()
            if not c or c == "\n":
                raise self.error("unterminated string literal", start)
            self.pos += 1
            if c == '"':
                return "".join(out)
            if c != "\\":
                if "\ud800" <= c <= "\udfff":  # as the escaped form: no UTF-8 spells it
                    raise self.error(f"U+{ord(c):04X} is not a Unicode scalar value", self.pos - 1)
                out.append(c)
                continue
            esc_pos = self.pos - 1
            e = self.peek()
            self.pos += 1
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
            elif e in _HEX_ESCAPES:
                digits = self.text[self.pos:self.pos + _HEX_ESCAPES[e]]
                if len(digits) != _HEX_ESCAPES[e] or not all(
                        d in "0123456789abcdefABCDEF" for d in digits):
                    raise self.error(f"bad \\{e} escape", esc_pos)
                cp = int(digits, 16)
                if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                    raise self.error(f"\\{e}{digits} is not a Unicode scalar value", esc_pos)
                out.append(chr(cp))
                self.pos += len(digits)
            else:
                raise self.error(f"unknown escape '\\{e}' in a string literal", esc_pos)

    def parse_string_atom(self):
        start = self.pos
        text = self.read_string_text()
        if self.peek() == "i" and self.peek(1) not in _NAME_CHARS:
            self.pos += 1
            return ("leaf", fold_case(Bytes(text.encode("utf-8"))), start)
        save = self.pos
        self.skip_inline()
        if self.startswith(".."):
            self.pos += 2
            self.skip_inline()
            if self.peek() != '"':
                raise self.error('expected a string after ".."')
            hi_pos = self.pos
            hi = self.read_string_text()
            if len(text) != 1 or len(hi) != 1:
                raise self.error("character range endpoints must be one character each",
                                 start if len(text) != 1 else hi_pos)
            if ord(hi) < ord(text):
                raise self.error(f"empty character range {text!r}..{hi!r}", start)
            return ("leaf", CharClass(((ord(text), ord(hi)),)), start)
        self.pos = save
        return ("leaf", Bytes(text.encode("utf-8")), start)

    def read_regex_text(self) -> Tuple[str, str]:
        start = self.pos
        self.pos += 1
        while True:
            c = self.peek()
            if not c or c == "\n":
                raise self.error("unterminated regex literal", start)
            if c == "\\":
                self.pos += 2
                continue
            if c == "/":
                break
            self.pos += 1
        pattern = self.text[start + 1:self.pos]
        self.pos += 1
        flags_start = self.pos
        while self.peek().isalpha() and self.peek().isascii():
            self.pos += 1
        if not pattern:
            raise self.error("empty regex literal", start)
        return pattern, self.text[flags_start:self.pos]

    def parse_special_token(self) -> TokenSet:
        start = self.pos
        end = self.text.find(">", start + 1)
        nl = self.text.find("\n", start)
        if end < 0 or (0 <= nl < end):
            raise self.error("unterminated special token '<...>'")
        body = self.text[start + 1:end]
        self.pos = end + 1
        if body.startswith("[") and body.endswith("]"):
            ids: List[int] = []
            for part in body[1:-1].split(","):
                bounds = part.strip().split("-")
                if not (1 <= len(bounds) <= 2 and all(b.strip().isdigit() for b in bounds)):
                    raise self.error(f"bad token id list <{body}> (expected <[id]>, "
                                     "<[lo-hi]> or a comma-separated list of both)", start)
                lo, hi = int(bounds[0]), int(bounds[-1])
                if hi < lo:
                    raise self.error(f"empty token id range {lo}-{hi}", start)
                if self.check_token_id is not None:
                    self.check_token_id(lo, start)
                    self.check_token_id(hi, start)
                ids.extend(range(lo, hi + 1))
            return TokenSet(ids)
        token = f"<{body}>"
        if self.resolve_token is None:
            raise self.error(f"named special token {token} needs a tokenizer "
                             "(use GrammarCompiler.compile_lark, or pass tokenizer_info)", start)
        return TokenSet((self.resolve_token(token, start),))
