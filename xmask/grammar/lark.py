"""Lark grammars (the dialect vLLM sends and llguidance documents) -> grammar IR.

Example::

    >>> from xmask.grammar.recognizer import Recognizer
    >>> g = parse_lark('''
    ... start: pair ("," pair)*
    ... pair: CNAME "=" SIGNED_INT
    ... %import common (CNAME, SIGNED_INT, WS_INLINE)
    ... %ignore WS_INLINE
    ... ''')
    >>> Recognizer(g).accepts(b"a = 1, b=-2"), Recognizer(g).accepts(b"a = 1,")
    (True, False)

What is read (XGrammar 0.2.8's Lark support; differences are listed below):

* definitions ``name: expansions``.  Lower-case names are rules, upper-case names (first
  letter after any ``_``) are terminals.  ``start`` is the root and becomes the rule ``root``
  (a user rule named ``root`` is renamed).  ``-`` may appear inside names.  Alternatives ``|``
  (also at the start of a following line), grouping ``( )``, optional ``[ ]``, postfix
  ``? * +``, ``~ n`` / ``~ m..n`` and ``{n}`` / ``{m,}`` / ``{,n}`` / ``{m,n}`` repetition,
  empty alternatives, aliases ``-> name`` (tree shaping: ignored);
* literals: ``"text"`` (escapes ``\\\\ \\" \\' \\/ \\n \\r \\t \\f \\xHH \\uHHHH \\UHHHHHHHH``;
  any other escape is an error), ``"text"i`` (case-insensitive), ranges ``"a".."z"``,
  regexes ``/.../flags`` (see :mod:`xmask.grammar.lark_terminals`);
* the tree-shaping modifiers ``?rule`` / ``!rule`` and inlined ``_rule`` names change nothing
  here; **priorities** ``rule.2`` / ``TERM.2`` are accepted and ignored with a
  ``UserWarning`` (XGrammar rejects them): they choose between parse trees, and a mask only
  depends on the language;
* rule attributes ``name[capture]`` / ``name[capture="x"]`` (``Grammar.captures``; the
  matcher reports their matches: ``GrammarMatcher.get_captures``) and ``temperature=...``
  (ignored with a warning: xmask does not sample);
  ``[lazy]``, ``[stop=X]`` and ``[suffix=X]`` (``X`` a string, regex or terminal name) make
  the rule match the *shortest* match of its terminal-level body (then ``X``), as XGrammar
  and llguidance do (:mod:`xmask.grammar.shortest_match`; for the masks ``stop`` and
  ``suffix`` are the same: the text contains ``X``).  ``max_tokens=n`` / ``max_chars=n``
  bound the rule as the same attributes do in XGrammar's EBNF (XGrammar prints them there;
  :mod:`xmask.grammar.rule_attributes`: exact bounds, or a run-time token budget over text);
  ``stop=""`` (stop at the end-of-sequence token) raises ``GrammarSyntaxError``
  ("not supported");
* ``%ignore`` items (terminals, literals, regexes; several ``%ignore`` lines add up),
  ``%import common.NAME [-> ALIAS]`` and ``%import common (A, B)`` (definitions in
  :data:`~xmask.grammar.lark_terminals.COMMON_TERMINALS`);
* llguidance's extensions, as XGrammar has them: ``%json {schema}`` (the grammar of the
  schema under ``Grammar.from_json_schema`` defaults), ``%regex {"substring_chunks": [...]}``
  (also ``substring_chars``: the concatenation of any contiguous run of the chunks),
  ``@name`` (a grammar of ``named_grammars``: a ``Grammar`` or Lark text), special tokens
  ``<|name|>`` (the token whose text that is; needs a tokenizer) and ``<[id]>`` /
  ``<[lo-hi,id,...]>`` (ids, checked against the tokenizer when one is given), which become
  :class:`~xmask.grammar.ir.TokenSet` nodes.  ``//`` and ``#`` comments.

**How ``%ignore`` maps to a character-level grammar** (as XGrammar): there is no lexer;
inside rules every *terminal occurrence* (a terminal name, a literal, a regex, a special
token, ``%json``, ``@name``) is followed by any number of ignored items.  So ignored text may
follow any terminal, including the last one, but not precede the first one; inside a
terminal nothing is ignored.  Without a lexer there is no longest-match tokenization either:
``start: NAME NAME`` accepts ``abcd`` (split anywhere), as XGrammar does.

Errors are :class:`~xmask.errors.GrammarSyntaxError` with the 1-based line and column:
malformed text, undefined or duplicate names, a terminal that references a rule or itself
(terminals are regular), a missing ``start``, special tokens / ``%json`` / ``@name`` inside a
terminal, named special tokens without a tokenizer, ``%import`` of anything but ``common``,
``%declare`` / ``%override`` / ``%extend`` / templates.  Left recursion, direct
(``sum: sum "+" product | product``) or indirect, is rewritten as repetition (same language,
:mod:`xmask.grammar.left_recursion`); left recursion behind a nullable prefix
(``a: "c"? a "x" | "y"``) makes the compiler raise a ``GrammarError`` naming the rule cycle
(XGrammar's Earley parser accepts it).

Deliberate differences from XGrammar (exact where XGrammar is looser or refuses):
``ESCAPED_STRING`` refuses a raw newline inside the quotes (Lark's definition; XGrammar allows
one); regex anchors are refused (XGrammar drops them); the ``m`` flag is accepted (no anchors,
so it has no effect); priorities are ignored with a warning instead of refused.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from .._recursion import deep_recursion
from ..errors import GrammarSyntaxError
from .combine import RuleNamer, embed_grammar
from .ir import EPSILON, Expr, Grammar, Repeat, RuleRef, make_choice, make_seq
from .lark_syntax import LarkParser, is_terminal_name
from .left_recursion import eliminate_left_recursion
from .shortest_match import shortest_match

__all__ = ["parse_lark"]


# ---------------------------------------------------------------------------- lowering

class _Lowering:
    """Resolves names and turns the AST into IR rules (terminals are followed by the
    ignore rule inside rules)."""

    def __init__(self, parser: LarkParser):
        self.p = parser
        self.rules: Dict[str, Expr] = {}
        if "start" not in parser.defs:
            raise GrammarSyntaxError("Lark: no 'start' rule (the grammar's root)", line=1,
                                     column=1)
        if parser.defs["start"].terminal:
            raise parser.error("'start' must be a rule", parser.defs["start"].pos)
        # start is the root, named "root" as XGrammar does; a user rule "root" is renamed.
        # Every name is reserved in ``rules`` (placeholders, in definition order) before any
        # helper rule is named: the namer and the DFA emitter both avoid the names in it.
        self.namer_names = {name: name for name in parser.defs}
        self.namer_names["start"] = "root"
        self.rules["root"] = EPSILON
        for name in parser.defs:
            if name not in ("start", "root"):
                self.rules[name] = EPSILON
        self.namer = RuleNamer(self.rules)
        if "root" in parser.defs:
            self.namer_names["root"] = self.namer.fresh("root")
            self.rules[self.namer_names["root"]] = EPSILON
        self.ignore: Optional[Expr] = None
        self.embedded_captures: Dict[str, str] = {}  # of @name grammars, under their new names
        self.ignore_name = self.namer.fresh("lark_ignore") if parser.ignores else None
        if self.ignore_name is not None:
            self.rules[self.ignore_name] = EPSILON

    def run(self) -> Grammar:
        p = self.p
        self.check_terminal_cycles()
        if self.ignore_name is not None:
            item = make_choice([self.lower(node, True) for node, _ in p.ignores])
            self.ignore = RuleRef(self.ignore_name)
            self.rules[self.ignore_name] = Repeat(item, 0, None)
        # terminals first: lazy rules expand the terminals they use
        for name, d in sorted(p.defs.items(), key=lambda item: not item[1].terminal):
            ir_name = self.namer_names[name]
            self.rules[ir_name] = self.lazy(d) if d.lazy else self.lower(d.body, d.terminal)
        captures = {self.namer_names[name]: d.capture for name, d in p.defs.items()
                    if d.capture is not None}
        captures.update(self.embedded_captures)
        budgets: Dict[str, int] = {}
        limits = {self.namer_names[name]: d.limits for name, d in p.defs.items() if d.limits}
        if limits:
            # ``max_tokens`` / ``max_chars`` mean what they mean in XGrammar's EBNF (which is
            # what XGrammar turns them into): one lowering serves both front ends.
            from .rule_attributes import apply_rule_attributes

            apply_rule_attributes(self.rules, limits, self.namer.fresh, p.line_col, budgets)
        return eliminate_left_recursion(Grammar(self.rules, root="root", captures=captures,
                                                budgets=budgets))

    def lazy(self, d) -> Expr:
        """A ``[lazy]`` / ``[stop=X]`` / ``[suffix=X]`` rule: the shortest match of its body
        (then X), a terminal-level expression (XGrammar's and llguidance's meaning)."""
        body = self.lower(d.body, True)
        if d.stop is not None:
            body = make_seq([body, self.lower(d.stop, True)])
        try:
            return shortest_match(body, self.rules, self.rules, d.name)
        except ValueError as e:
            raise self.p.error(f"lazy rule '{d.name}': {e}", d.pos) from None

    def lookup(self, name: str, pos: int, terminal: bool) -> str:
        d = self.p.defs.get(name)
        if d is None:
            kind = "terminal" if is_terminal_name(name) else "rule"
            raise self.p.error(f"undefined {kind} '{name}'", pos)
        if terminal and not d.terminal:
            raise self.p.error(f"a terminal cannot reference the rule '{name}'", pos)
        return self.namer_names[name]

    def with_ignore(self, expr: Expr) -> Expr:
        return expr if self.ignore is None else make_seq([expr, self.ignore])

    def lower(self, node, terminal: bool) -> Expr:
        kind = node[0]
        if kind == "leaf":
            return node[1] if terminal else self.with_ignore(node[1])
        if kind == "name":
            name = node[1]
            ref = RuleRef(self.lookup(name, node[2], terminal))
            return ref if terminal or not is_terminal_name(name) else self.with_ignore(ref)
        if kind == "seq":
            return make_seq([self.lower(x, terminal) for x in node[1]])
        if kind == "alt":
            return make_choice([self.lower(x, terminal) for x in node[1]])
        if kind == "rep":
            item = self.lower(node[1], terminal)
            if node[3] == 0 or item == EPSILON:
                return EPSILON
            if node[2] == node[3] == 1:
                return item
            return Repeat(item, node[2], node[3])
        if kind == "token":
            return self.with_ignore(node[1])
        if kind == "embed":
            return self.with_ignore(embed_grammar(self.rules, node[1], self.namer, node[2],
                                                  self.embedded_captures))
        raise AssertionError(kind)

    def check_terminal_cycles(self) -> None:
        defs = self.p.defs
        state: Dict[str, int] = {}  # 1 = on the stack, 2 = done

        def refs(node):
            if node[0] == "name":
                yield node[1], node[2]
            elif node[0] in ("seq", "alt"):
                for x in node[1]:
                    yield from refs(x)
            elif node[0] == "rep":
                yield from refs(node[1])

        def visit(name: str) -> None:
            state[name] = 1
            for ref, pos in refs(defs[name].body):
                d = defs.get(ref)
                if d is None or not d.terminal:
                    continue  # reported when lowering
                if state.get(ref) == 1:
                    raise self.p.error(f"terminal '{ref}' references itself (terminals are "
                                       "regular: use a rule for recursion)", pos)
                if ref not in state:
                    visit(ref)
            state[name] = 2

        for name, d in defs.items():
            if d.terminal and name not in state:
                visit(name)
        refs = visit = None  # (recursive closures: drop the cycles now, not in a GC pass)


def parse_lark(text: str, *, tokenizer_info=None, named_grammars=None,
               _active: Tuple[str, ...] = ()) -> Grammar:
    """The grammar of Lark text ``text`` (see the module docstring).

    ``tokenizer_info`` resolves named special tokens (``<|python_tag|>``) and checks token
    ids; ``named_grammars`` maps the names used as ``@name`` to a ``Grammar`` or Lark text.

    Example::

        >>> print(parse_lark('start: "a" b\\nb: /[0-9]+/'))
        root ::= "a" b
        b ::= [0-9]+
    """
    if not isinstance(text, str):
        raise TypeError(f"Lark grammar must be a str, not {type(text).__name__}")
    if named_grammars is not None and not isinstance(named_grammars, dict):
        raise TypeError("named_grammars must be a dict of name -> Grammar or Lark str")
    named_grammars = named_grammars or {}
    for key, value in named_grammars.items():
        if not isinstance(key, str):
            raise TypeError("named grammar names must be strings")
        if not isinstance(value, (Grammar, str)):
            raise TypeError("named grammar values must be Grammar instances or Lark strings")

    parser: LarkParser

    def named(name: str, pos: int) -> Grammar:
        if name not in named_grammars:
            raise parser.error(f"unknown named grammar '@{name}'", pos)
        value = named_grammars[name]
        if isinstance(value, Grammar):
            return value
        if name in _active:
            raise parser.error(f"named grammar '@{name}' references itself", pos)
        return parse_lark(value, tokenizer_info=tokenizer_info, named_grammars=named_grammars,
                          _active=_active + (name,))

    resolve = check = None
    if tokenizer_info is not None:
        def resolve(token, pos: int) -> int:
            from ..errors import InvalidTokenError
            from ..tokenizer.token_lookup import resolve_token

            try:
                return resolve_token(tokenizer_info, token)
            except InvalidTokenError as e:
                raise parser.error(str(e), pos) from None

        def check(token_id: int, pos: int) -> None:
            resolve(token_id, pos)

    parser = LarkParser(text, resolve, check, named)
    with deep_recursion("Lark grammar"):  # (the parser and the lowering recurse on nesting)
        parser.parse()
        out = _Lowering(parser).run()
    # the parser holds the callbacks, which hold the parser: drop the cycle now, not in a GC pass
    parser = None  # noqa: F841
    return out
