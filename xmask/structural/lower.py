"""Lower parsed structural-tag formats (:mod:`.spec`) to one xmask :class:`Grammar`.

Semantics follow XGrammar 0.2.8 (what its ``Grammar.from_structural_tag`` builds and its
matcher accepts), made exact:

* ``const_string`` / ``regex`` / ``grammar`` / ``json_schema``: that text, regex (full match),
  EBNF grammar or schema (JSON whitespace rules of XGrammar's structural tags: any whitespace,
  ``strict_mode=True``); an embedded grammar keeps its own rules under fresh names.
* ``tag``: ``begin content end`` (``end`` one of several strings, or a token).  Free text
  inside a tag (``any_text``, the free text of ``triggered_tags``) never contains the tag's
  non-empty end strings: the first end string ends it (XGrammar passes them down as excluded
  strings, through sequences, alternatives, repeats and dispatch contents, but not into a
  nested tag nor into the free text of ``dispatch`` itself).
* ``triggered_tags`` / ``dispatch`` / ``any_text`` with excluded strings: free text lowered by
  :mod:`xmask.grammar.free_text` (the first trigger occurrence dispatches, even across what
  came before).  ``at_least_one``: the text starts with a tag; ``stop_after_first``: nothing
  after the first tag.
* token formats become :class:`~xmask.grammar.ir.TokenSet` nodes; token strings are resolved
  against the tokenizer (``Grammar.from_structural_tag`` has none and refuses them, as
  XGrammar does).  ``any_tokens.max_tokens`` is an exact bounded repeat.
* ``any_text.max_chars`` counts code points exactly; ``any_text.max_tokens`` becomes a rule
  with a runtime token budget (``Grammar.budgets``, as ``rule[max_tokens=n]`` in EBNF): at
  most ``n`` tokens that start inside the text; ``max_tokens=0`` raises.

Example::

    >>> g = structural_tag_to_grammar({"format": {"type": "tag", "begin": "<a>",
    ...     "content": {"type": "any_text"}, "end": "</a>"}})
    >>> from xmask.grammar.recognizer import Recognizer
    >>> r = Recognizer(g)
    >>> r.accepts(b"<a>x</a"), r.accepts(b"<a>x</a>"), r.accepts(b"<a>x</a>y</a>")
    (False, True, False)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Tuple

from ..compiler.special_literals import special_texts
from ..errors import GrammarLimitError, InvalidStructuralTagError, XmaskError
from ..grammar.combine import RuleNamer, embed_grammar
from ..grammar.ebnf import parse_ebnf
from ..grammar.free_text import FreeText, lower_free_text
from ..grammar.ir import EPSILON, Bytes, CharClass, Choice, Expr, Grammar, Repeat, RuleRef, Seq, \
    TokenSet
from ..grammar.json_schema import json_schema_to_grammar
from ..grammar.regex import regex_to_grammar
from . import spec as S

__all__ = ["structural_tag_to_grammar", "schema_grammar"]

_ANY = CharClass((), negated=True)


def _wrap(err: Exception, path: str) -> XmaskError:
    """An inner xmask error (bad regex, schema, EBNF, token) as one naming the JSON path."""
    if isinstance(err, InvalidStructuralTagError):
        return err
    if isinstance(err, GrammarLimitError):
        out = GrammarLimitError(f"{err} (in the structural tag at {path})")
    else:
        out = InvalidStructuralTagError(f"{type(err).__name__}: {err}", path)
    out.__cause__ = err
    return out


def schema_grammar(fmt) -> Grammar:
    """The grammar of a ``json_schema`` (or deprecated ``qwen_xml_parameter``) format.

    Styles other than ``"json"`` and ``excludes`` come from
    ``xmask.grammar.schema_styles.json_schema_format_grammar`` when that module is present."""
    if isinstance(fmt, S.QwenXMLParameter):
        style, any_order, max_ws, excludes = "qwen_xml", False, None, ()
    else:
        style, any_order, max_ws, excludes = (fmt.style, fmt.any_order, fmt.max_whitespace_cnt,
                                              fmt.excludes)
    try:
        from ..grammar.schema_styles import json_schema_format_grammar
    except ImportError:
        json_schema_format_grammar = None
    if json_schema_format_grammar is not None:
        return json_schema_format_grammar(fmt.json_schema, style=style, any_order=any_order,
                                          max_whitespace_cnt=max_ws, excludes=tuple(excludes))
    if style != "json":
        where = fmt.path if isinstance(fmt, S.QwenXMLParameter) else f"{fmt.path}.style"
        raise InvalidStructuralTagError(f"json_schema style {style!r} is not supported yet",
                                        where)
    if excludes:
        raise InvalidStructuralTagError("json_schema 'excludes' are not supported yet",
                                        f"{fmt.path}.excludes")
    return json_schema_to_grammar(fmt.json_schema, any_whitespace=True, strict_mode=True,
                                  max_whitespace_cnt=max_ws, any_order=any_order)


class _Lowerer:
    def __init__(self, tokenizer_info):
        self.rules: Dict[str, Expr] = {"root": EPSILON}
        self.names = RuleNamer(self.rules)
        self.info = tokenizer_info
        self.captures: Dict[str, str] = {}  # of embedded EBNF grammars (capture attributes)
        self.budgets: Dict[str, int] = {}  # rule -> runtime token budget (any_text.max_tokens...)

    # ---------------------------------------------------------------- helpers

    def rule(self, hint: str, expr: Expr) -> RuleRef:
        name = self.names.fresh(hint)
        self.rules[name] = expr
        return RuleRef(name)

    def embed(self, make, path: str, hint: str) -> RuleRef:
        try:
            g = make()
        except XmaskError as e:
            raise _wrap(e, path) from e
        return embed_grammar(self.rules, g, self.names, hint, self.captures, self.budgets)

    def token_id(self, tok, path: str) -> int:
        if self.info is None:
            if isinstance(tok, str):
                raise InvalidStructuralTagError(
                    f"token string {tok!r} needs a tokenizer to be resolved: compile the "
                    "structural tag with GrammarCompiler.compile_structural_tag", path)
            return tok
        from ..tokenizer.token_lookup import resolve_token

        try:
            return resolve_token(self.info, tok, where=path)
        except XmaskError as e:
            raise _wrap(e, path) from e

    def token_ids(self, toks, path: str, key: str) -> List[int]:
        return [self.token_id(t, f"{path}.{key}[{i}]") for i, t in enumerate(toks)]

    def free_text(self, spec: FreeText, path: str, hint: str) -> RuleRef:
        if self.info is not None:  # a trigger that is a special token's text: that token fires it
            specials = special_texts(self.info).by_text
            whole = tuple(t for t in [t for t, _ in spec.triggers] + list(spec.stop_strings)
                          if t.encode("utf-8") in specials)
            if whole:
                spec = replace(spec, whole_texts=whole)
        try:
            return lower_free_text(self.rules, self.names, spec, hint)
        except XmaskError as e:
            raise _wrap(e, path) from e

    # ---------------------------------------------------------------- formats

    def lower(self, fmt, ends: Tuple[str, ...]) -> Expr:
        """``fmt`` as an expression; ``ends``: the end strings of the nearest enclosing tag,
        which free text inside it must not contain."""
        method = getattr(self, "_" + type(fmt).__name__.lower().rstrip("_"))
        return method(fmt, ends)

    def _conststring(self, f: S.ConstString, ends):
        return Bytes(f.value.encode("utf-8"))

    def _jsonschema(self, f, ends):
        return self.embed(lambda: schema_grammar(f), f.path, "json_schema")

    _qwenxmlparameter = _jsonschema

    def _grammartext(self, f: S.GrammarText, ends):
        return self.embed(lambda: parse_ebnf(f.grammar), f"{f.path}.grammar", "grammar")

    def _regex(self, f: S.Regex, ends):
        return self.embed(lambda: regex_to_grammar(f.pattern), f"{f.path}.pattern", "regex")

    def _anytext(self, f: S.AnyText, ends):
        if f.max_tokens == 0:
            raise InvalidStructuralTagError(
                "any_text 'max_tokens' must be at least 1 in xmask (a budget of 0 tokens would "
                "only allow the rest of the token the text starts in)", f"{f.path}.max_tokens")
        excludes = _dedup(f.excludes + ends)
        if not excludes:
            text = self.rule("any_text", Repeat(_ANY, 0, f.max_chars))
        else:
            text = self.free_text(FreeText(excludes=excludes, max_chars=f.max_chars), f.path,
                                  "any_text")
        if f.max_tokens is None:
            return text
        budgeted = self.rule("any_text_budget", text)
        self.budgets[budgeted.name] = f.max_tokens
        return budgeted

    def _token(self, f: S.Token, ends):
        return TokenSet((self.token_id(f.token, f"{f.path}.token"),))

    def _excludetoken(self, f: S.ExcludeToken, ends):
        return TokenSet(self.token_ids(f.exclude_tokens, f.path, "exclude_tokens"), negated=True)

    def _anytokens(self, f: S.AnyTokens, ends):
        one = TokenSet(self.token_ids(f.exclude_tokens, f.path, "exclude_tokens"), negated=True)
        return self.rule("any_tokens", Repeat(one, 0, f.max_tokens))

    def _sequence(self, f: S.Sequence, ends):
        return Seq(tuple(self.lower(e, ends) for e in f.elements))

    def _or(self, f: S.Or, ends):
        return self.rule("or", Choice(tuple(self.lower(e, ends) for e in f.elements)))

    def _repeat(self, f: S.Repeat, ends):
        return Repeat(self.lower(f.content, ends), f.min, None if f.max == -1 else f.max)

    def _tag_parts(self, f: S.Tag) -> Tuple[Expr, Expr, Tuple[str, ...]]:
        if isinstance(f.begin, S.Token):
            begin: Expr = self._token(f.begin, ())
        else:
            begin = Bytes(f.begin.encode("utf-8"))
        if isinstance(f.end, S.Token):
            return begin, self._token(f.end, ()), ()
        alts = _dedup(f.end)
        end = Bytes(alts[0].encode()) if len(alts) == 1 else \
            Choice(tuple(Bytes(e.encode("utf-8")) for e in alts))
        return begin, end, tuple(e for e in alts if e)

    def _tag(self, f: S.Tag, ends):
        begin, end, inner_ends = self._tag_parts(f)
        return self.rule("tag", Seq((begin, self.lower(f.content, inner_ends), end)))

    def _tag_rest(self, f: S.Tag, skip: int) -> Expr:
        """A tag without the first ``skip`` characters of its (string) begin."""
        _, end, inner_ends = self._tag_parts(f)
        return Seq((Bytes(f.begin[skip:].encode("utf-8")), self.lower(f.content, inner_ends), end))

    def _triggeredtags(self, f: S.TriggeredTags, ends):
        first = [self._tag(t, ()) for t in f.tags] if f.at_least_one else None
        if f.at_least_one and f.stop_after_first:
            return self.rule("triggered_tags", Choice(tuple(first)))
        groups = []
        for trig in f.triggers:
            alts = [self._tag_rest(t, len(trig)) for t in f.tags if t.begin.startswith(trig)]
            groups.append((trig, self.rule("triggered_tags_group", _choice(alts))))
        text = self.free_text(FreeText(triggers=tuple(groups),
                                       excludes=_dedup(f.excludes + ends),
                                       loop=not f.stop_after_first), f.path, "triggered_tags")
        if first is None:
            return text
        return self.rule("triggered_tags", Seq((_choice(first), text)))

    def _token_free(self, rules_by_token: List[Tuple[int, Expr]], excluded: List[int],
                    loop: bool, hint: str) -> RuleRef:
        """Any tokens but the triggers and the excluded ones; a trigger token dispatches."""
        name = self.names.fresh(hint)
        me = RuleRef(name)
        free = Repeat(TokenSet([t for t, _ in rules_by_token] + excluded, negated=True), 0, None)
        alts: List[Expr] = [EPSILON]
        for tok, then in rules_by_token:
            alts.append(Seq((TokenSet((tok,)), then, me)) if loop else Seq((TokenSet((tok,)), then)))
        self.rules[name] = Seq((free, Choice(tuple(alts))))
        return me

    def _tokentriggeredtags(self, f: S.TokenTriggeredTags, ends):
        triggers = self.token_ids(f.trigger_tokens, f.path, "trigger_tokens")
        excluded = self.token_ids(f.exclude_tokens, f.path, "exclude_tokens")
        by_token: Dict[int, List[Expr]] = {t: [] for t in triggers}
        first = []
        for i, t in enumerate(f.tags):
            begin, end, inner_ends = self._tag_parts(t)
            content = self.lower(t.content, inner_ends)
            if begin.ids[0] not in by_token:
                raise InvalidStructuralTagError("the tag's begin token is not one of the "
                                                "trigger tokens", f"{f.path}.tags[{i}].begin")
            by_token[begin.ids[0]].append(Seq((content, end)))
            first.append(Seq((begin, content, end)))
        if f.at_least_one and f.stop_after_first:
            return self.rule("token_triggered_tags", _choice(first))
        groups = [(t, self.rule("token_triggered_tags_group", _choice(alts)))
                  for t, alts in by_token.items() if alts]
        text = self._token_free(groups, excluded, not f.stop_after_first, "token_triggered_tags")
        if not f.at_least_one:
            return text
        return self.rule("token_triggered_tags", Seq((_choice(first), text)))

    def _tagswithseparator(self, f: S.TagsWithSeparator, ends):
        tags = self.rule("tags_with_separator_tags", _choice([self._tag(t, ()) for t in f.tags]))
        if f.stop_after_first:
            body: Expr = tags
        else:
            body = Seq((tags, Repeat(Seq((Bytes(f.separator.encode("utf-8")), tags)), 0, None)))
        return self.rule("tags_with_separator",
                         body if f.at_least_one else Choice((EPSILON, body)))

    def _dispatch(self, f: S.Dispatch, ends):
        rules = tuple((pat, self.lower(fmt, ends)) for pat, fmt in f.rules)
        return self.free_text(FreeText(triggers=rules, excludes=_dedup(f.excludes), loop=f.loop),
                              f.path, "dispatch")

    def _tokendispatch(self, f: S.TokenDispatch, ends):
        rules = [(self.token_id(tok, f"{f.path}.rules[{i}][0]"), self.lower(fmt, ends))
                 for i, (tok, fmt) in enumerate(f.rules)]
        excluded = self.token_ids(f.exclude_tokens, f.path, "exclude_tokens")
        return self._token_free(rules, excluded, f.loop, "token_dispatch")


def _dedup(items) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _choice(alts: List[Expr]) -> Expr:
    return alts[0] if len(alts) == 1 else Choice(tuple(alts))


def structural_tag_to_grammar(structural_tag, tokenizer_info=None) -> Grammar:
    """The grammar of ``structural_tag`` (JSON text, dict, pydantic ``StructuralTag`` or a
    parsed :class:`~xmask.structural.spec.StructuralTagSpec`).  ``tokenizer_info`` resolves
    token strings (without it only token ids are allowed).

    Example::

        >>> print(structural_tag_to_grammar({"format": {"type": "or", "elements": [
        ...     {"type": "const_string", "value": "yes"}, {"type": "const_string", "value": "no"}]}}))
        root ::= or
        or ::= "yes" | "no"
    """
    st = structural_tag if isinstance(structural_tag, S.StructuralTagSpec) else \
        S.parse_structural_tag(structural_tag)
    low = _Lowerer(tokenizer_info)
    low.rules["root"] = low.lower(st.format, ())
    return Grammar(low.rules, "root", captures=low.captures, budgets=low.budgets)
