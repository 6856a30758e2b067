"""XGrammar's function-call atoms in EBNF: ``Regex``, ``Substring``, ``Token``,
``ExcludeToken``, ``TagDispatch`` and ``TokenTagDispatch``.

Arguments follow XGrammar's macro syntax: positional values, then ``name=value`` pairs;
a value is a string literal (EBNF escapes), a non-negative integer, ``true`` / ``false``, a
rule name, or a parenthesized tuple of values (a trailing comma is allowed in a tuple).

* ``Regex("pattern")``: the strings fully matching the regex (:mod:`xmask.grammar.regex`).
  ``json_string=true`` keeps only the matches that can stand unescaped inside a JSON string
  (no ``"``, ``\\`` or control character), as XGrammar does.
* ``Substring("c1", "c2", ...)``: any run of consecutive chunks ``c_i c_(i+1) ... c_j``,
  or the empty string (XGrammar 0.2.8's meaning, measured: ``Substring("hello")`` accepts
  only ``""`` and ``"hello"``; ``Substring("a", "b", "c")`` accepts ``"bc"`` but not ``"ac"``).
* ``Token(1, 2)`` / ``ExcludeToken(3)``: one whole token whose id is (is not) listed
  (:class:`~xmask.grammar.ir.TokenSet`).
* ``TagDispatch(("trigger", rule), ..., loop_after_dispatch=true, excludes=("s", ...))``:
  free text until a trigger, then the trigger's rule (lowered by
  :mod:`xmask.grammar.free_text`); ``TokenTagDispatch((id, rule), ...)``: the same over
  whole tokens.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> print(parse_ebnf('root ::= Regex("[0-9]+") Token(7)'))
    root ::= [0-9]+ Token(7)
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..errors import RegexSyntaxError
from .ir import EPSILON, Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq, TokenSet, intersect_ranges, node_kind

__all__ = ["BUILTINS", "MacroArgs", "parse_builtin", "Ident", "TagDispatchSpec", "TokenTagDispatchSpec"]

BUILTINS = frozenset({"Regex", "Substring", "Token", "ExcludeToken", "TagDispatch", "TokenTagDispatch"})

# characters allowed unescaped inside a JSON string: no '"', no '\\', no control character
_JSON_SAFE = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))
_NOTHING = CharClass(())  # the empty language


class Ident(str):
    """A rule name given as a macro argument (``(\"<a>\", body)``)."""


class MacroArgs:
    """Parsed macro arguments: ``positional`` values and ``named`` values, each with the
    text position it starts at (for error messages)."""

    def __init__(self):
        self.positional: List[Tuple[object, int]] = []
        self.named: Dict[str, Tuple[object, int]] = {}


class TagDispatchSpec:
    """A parsed ``TagDispatch(...)``: ``(trigger, rule)`` pairs, ``loop_after_dispatch`` and
    ``excludes``; lowered once all rules are known."""

    def __init__(self, pairs, loop_after_dispatch, excludes, pos):
        self.pairs: List[Tuple[str, str]] = pairs
        self.loop_after_dispatch: bool = loop_after_dispatch
        self.excludes: List[str] = excludes
        self.pos = pos
        self.max_chars: Optional[int] = None  # set when the rule's max_chars bounds the free text


class TokenTagDispatchSpec(TagDispatchSpec):
    """A parsed ``TokenTagDispatch(...)``: triggers and excludes are token ids."""


def _is_text(value) -> bool:
    """Whether a macro value is a string literal (not a rule name)."""
    return isinstance(value, str) and not isinstance(value, Ident)


def _parse_value(p):
    """One macro value at the parser's position; returns ``(value, start)``."""
    p.skip_ws()
    start = p.pos
    c = p.peek()
    if c == '"':
        return p.parse_string_text(), start
    if c == "(":
        p.pos += 1
        items = []
        p.skip_ws()
        if p.peek() == ")":
            p.pos += 1
            return tuple(items), start
        while True:
            items.append(_parse_value(p)[0])
            p.skip_ws()
            c = p.peek()
            if c == ",":
                p.pos += 1
                p.skip_ws()
                if p.peek() == ")":
                    p.pos += 1
                    return tuple(items), start
            elif c == ")":
                p.pos += 1
                return tuple(items), start
            else:
                raise p.error("expected ',' or ')' in a tuple")
    if c and c in "-0123456789":
        q = start + 1
        while q < p.n and p.text[q] in "0123456789":
            q += 1
        digits = p.text[start:q]
        if digits == "-":
            raise p.error("expected a number after '-'")
        p.pos = q
        return int(digits), start
    end = p.name_end(start)
    if end > start:
        word = p.text[start:end]
        p.pos = end
        if word in ("true", "false"):
            return word == "true", start
        return Ident(word), start
    if not c:
        raise p.error("unexpected end of input in macro arguments")
    raise p.error(f"expected a string, integer, boolean, rule name or tuple, found {c!r}")


def _parse_args(p, name: str) -> MacroArgs:
    p.pos += 1  # '('
    args = MacroArgs()
    p.skip_ws()
    if p.peek() == ")":
        p.pos += 1
        return args
    while True:
        p.skip_ws()
        start = p.pos
        end = p.name_end(start)
        q = end
        while q < p.n and p.text[q] in " \t":
            q += 1
        if end > start and p.text.startswith("=", q) and not p.text.startswith("==", q):
            key = p.text[start:end]
            if key in args.named:
                raise p.error(f"{name}(): argument '{key}' given twice", start)
            p.pos = q + 1
            args.named[key] = (_parse_value(p)[0], start)
        else:
            if args.named:
                raise p.error(f"{name}(): positional argument after a named one", start)
            args.positional.append(_parse_value(p))
        p.skip_ws()
        if p.comma_or_close(")", f"after an argument of {name}()"):
            return args


def _check_named(p, name: str, args: MacroArgs, allowed) -> None:
    for key, (_, pos) in args.named.items():
        if key not in allowed:
            shown = ", ".join(sorted(allowed)) or "none"
            raise p.error(f"{name}() has no argument '{key}' (named arguments: {shown})", pos)


def _bool_arg(p, name: str, args: MacroArgs, key: str, default: bool) -> bool:
    if key not in args.named:
        return default
    value, pos = args.named[key]
    if type(value) is not bool:
        raise p.error(f"{name}(): {key} must be true or false", pos)
    return value


def _token_ids(p, name: str, values, pos) -> List[int]:
    ids = []
    for v in values:
        if type(v) is not int or v < 0:
            raise p.error(f"{name}(): token ids must be non-negative integers, found {v!r}", pos)
        ids.append(v)
    return ids


def json_safe(expr: Expr) -> Expr:
    """``expr`` (a rule-free regex expression) restricted to strings that need no escape in a
    JSON string."""
    t = node_kind(expr)
    if t is Bytes:
        text = expr.data.decode("utf-8", "replace")
        return expr if all(ord(ch) >= 0x20 and ch not in '"\\' for ch in text) else _NOTHING
    if t is CharClass:
        return CharClass(intersect_ranges(expr.positive_ranges(), _JSON_SAFE))
    if t is Seq:
        return Seq(tuple(json_safe(x) for x in expr.items))
    if t is Choice:
        return Choice(tuple(json_safe(x) for x in expr.items))
    if t is Repeat:
        return Repeat(json_safe(expr.item), expr.min, expr.max)
    return expr


def _regex(p, args: MacroArgs, start: int) -> Expr:
    from .regex import regex_to_expr

    _check_named(p, "Regex", args, {"json_string"})
    if len(args.positional) != 1 or not _is_text(args.positional[0][0]):
        raise p.error("Regex() takes exactly one string argument (the pattern)", start)
    pattern, pos = args.positional[0]
    try:
        expr = regex_to_expr(pattern)
    except RegexSyntaxError as e:
        raise p.error(f"invalid regex in Regex(): {e}", pos) from None
    if _bool_arg(p, "Regex", args, "json_string", False):
        expr = json_safe(expr)
    return expr


def _substring(p, args: MacroArgs, start: int) -> Expr:
    _check_named(p, "Substring", args, ())
    chunks = []
    for value, pos in args.positional:
        if not _is_text(value):
            raise p.error("Substring() arguments must be string literals", pos)
        chunks.append(Bytes(value.encode("utf-8", "surrogatepass")) if value else EPSILON)
    if not chunks:
        return EPSILON
    # tail_k = "" | c_k tail_(k+1): the runs that continue from chunk k; one rule each keeps
    # the grammar linear in the number of chunks.
    names = [p.fresh_rule("substring_tail") for _ in chunks[1:]]
    for k in range(len(names)):
        nxt = [RuleRef(names[k + 1])] if k + 1 < len(names) else []
        p.add_rule(names[k], Choice((EPSILON, _seq([chunks[k + 1]] + nxt))))
    starts = [_seq([c] + ([RuleRef(names[i])] if i < len(names) else [])) for i, c in enumerate(chunks)]
    return Choice(tuple([EPSILON] + starts))


def _seq(items) -> Expr:
    items = [x for x in items if x != EPSILON]
    if not items:
        return EPSILON
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _tokens(p, name: str, args: MacroArgs, start: int) -> Expr:
    _check_named(p, name, args, ())
    if not args.positional and name == "Token":
        raise p.error(f"{name}() needs at least one token id", start)
    # ExcludeToken() (no id) is any token: XGrammar prints it for any_tokens formats
    ids = _token_ids(p, name, [v for v, _ in args.positional], start)
    return TokenSet(ids, negated=(name == "ExcludeToken"))


def _dispatch(p, name: str, args: MacroArgs, start: int) -> Expr:
    tokens = name == "TokenTagDispatch"
    _check_named(p, name, args, {"loop_after_dispatch", "excludes"})
    pairs = []
    for value, pos in args.positional:
        if type(value) is not tuple or len(value) != 2:
            raise p.error(f"{name}(): each dispatch entry must be a pair (trigger, rule)", pos)
        trigger, rule = value
        if tokens:
            _token_ids(p, name, [trigger], pos)
        elif not _is_text(trigger) or not trigger:
            raise p.error(f"{name}(): a trigger must be a non-empty string literal", pos)
        if not isinstance(rule, Ident):
            raise p.error(f"{name}(): the second item of a dispatch pair must be a rule name", pos)
        p.note_ref(str(rule), pos)
        pairs.append((trigger, str(rule)))
    excludes = []
    if "excludes" in args.named:
        value, pos = args.named["excludes"]
        if not isinstance(value, tuple):
            value = (value,)  # XGrammar prints a one-element tuple without its comma
        for v in value:
            if tokens:
                _token_ids(p, name, [v], pos)
            elif not _is_text(v) or not v:
                raise p.error(f"{name}(): excludes must be non-empty string literals", pos)
            excludes.append(v)
        for v in excludes:
            for trigger, _ in pairs:
                if (tokens and v == trigger) or (not tokens and trigger.startswith(v)):
                    raise p.error(f"{name}(): excluded {v!r} would block trigger {trigger!r}", pos)
    loop = _bool_arg(p, name, args, "loop_after_dispatch", True)
    spec_type = TokenTagDispatchSpec if tokens else TagDispatchSpec
    return p.add_dispatch(spec_type(pairs, loop, excludes, start))


def parse_builtin(p, name: str) -> Expr:
    """Parse the call ``name(...)`` at the parser's position (on ``name``)."""
    start = p.pos
    p.pos += len(name)
    args = _parse_args(p, name)
    if name == "Regex":
        return _regex(p, args, start)
    if name == "Substring":
        return _substring(p, args, start)
    if name in ("Token", "ExcludeToken"):
        return _tokens(p, name, args, start)
    return _dispatch(p, name, args, start)
