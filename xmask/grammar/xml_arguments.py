"""Tool-call arguments written as XML-like parameters (structural tags' ``json_schema``
format with an XML ``style``), as XGrammar 0.2.8 writes them.

One parameter per property of the arguments object, in the model's syntax:

==================  ================================================================
``qwen_xml``        ``<parameter=KEY>VALUE</parameter>``
``minimax_xml``     ``<parameter name="KEY">VALUE</parameter>``
``glm_xml``         ``<arg_key>KEY</arg_key> <arg_value>VALUE</arg_value>``
``kimi_k3_xml``     ``<|open|>argument key="KEY" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>``
``deepseek_xml``    ``<｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>``
``deepseek_v4_1_xml`` the same with ``<｜DSML｜ parameter`` (a space)
``cohere_xml``      ``<cofl:value name="KEY" type="raw|json|dict|list">VALUE</cofl:value>``
``minimax_m3_xml``  ``]<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>``
==================  ================================================================

Values: a string is its raw text (no JSON quotes or escapes, no XML escaping), other values
are JSON (any whitespace inside), except that ``cohere_xml`` and ``minimax_m3_xml`` write
nested objects and arrays as nested parameters (cohere list items ``<cofl:value
type="...">``, MiniMax-M3 ``<item>``).  Whitespace may surround every parameter and every
non-string value (never a ``minimax_m3_xml`` value); an unconstrained string value is bare
(its whitespace is part of the string).  ``type``/``string`` attributes name the value's
kind (Kimi: ``number`` for integers too; DeepSeek: ``true`` for strings).

Exact where XGrammar loosens (README): a raw string never contains its closing tag (nor an
excluded substring), also under ``pattern``/``format``/length constraints; additional
parameter names never repeat a declared one; ``any_order`` keeps required parameters
required and each at most once (up to ``MAX_ANY_ORDER_PROPERTIES`` declared parameters,
else ``UnsupportedSchemaError``); a Kimi ``type`` / DeepSeek ``string`` / Cohere ``type``
attribute must name the kind of the value that follows; ``minimax_m3_xml`` accepts
constrained strings (XGrammar raises).  Unsupported (``UnsupportedSchemaError``): a root
that cannot be an object, ``patternProperties``/``propertyNames`` on a parameter object,
``additionalProperties`` in ``minimax_m3_xml`` (without it, an object there has only its
declared parameters, as in XGrammar), ``prefixItems``/``contains``/``uniqueItems``
on arrays written as XML items.

Example::

    >>> from xmask.grammar.recognizer import Recognizer
    >>> g = xml_arguments_grammar({"type": "object", "properties": {"city": {"type": "string"}},
    ...                            "required": ["city"]}, "qwen_xml")
    >>> r = Recognizer(g)
    >>> r.accepts("<parameter=city>New York</parameter>".encode()), r.accepts(b"<parameter=x>1</parameter>")
    (True, False)
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import UnsupportedSchemaError
from .ir import Bytes, CharClass, EPSILON, Expr, Grammar, Repeat, RuleRef, make_choice, make_seq
from .json_schema import MAX_ANY_ORDER_PROPERTIES, SchemaParts
from .code_point_dfa import Dfa, dfa_literals, dfa_product
from .dfa_expr import dfa_from_expr, dfa_to_expr
from .text_exclusion import automaton_rules, contains_any, exclude_words, until_first

__all__ = ["XML_STYLES", "xml_arguments_grammar"]

_WS = CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))
_DSML = "\uff5cDSML\uff5c"
_NON_STRING = ("null", "boolean", "number", "array", "object")
_ANY_TEXT = Dfa([((0, 0xD7FF, 0), (0xE000, 0x10FFFF, 0))], [True])
_IDENT = make_seq([CharClass(((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
                   Repeat(CharClass(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))), 0, None)])
# a Cohere attribute value: any character but NUL " & < >, or one of their escapes
_COHERE_NAME = Repeat(make_choice([CharClass(((0, 0), (0x22, 0x22), (0x26, 0x26), (0x3C, 0x3C), (0x3E, 0x3E)),
                                             negated=True),
                                   Bytes(b"&amp;"), Bytes(b"&lt;"), Bytes(b"&gt;"), Bytes(b"&quot;")]), 1, None)


def _b(text: str) -> Bytes:
    return Bytes(text.encode())


def _cohere_escape(name: str) -> str:
    return name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class _Style(NamedTuple):
    """How one style writes a parameter.  ``groups``: (attribute value, kinds) pairs, one
    alternative each (attribute None: the style has no kind attribute); ``end``: the text
    closing a value, which a raw string never contains; ``bare_strings``: every string value
    is bare (else only unconstrained ones); ``value_ws``: whitespace around other values;
    ``nested``: objects and arrays are nested parameters; ``additional_names``: parameters
    outside the declared ones can be written; ``excludes``: the style takes ``excludes``."""

    name: str
    groups: tuple
    end: str
    bare_strings: bool = False
    value_ws: bool = True
    nested: bool = False
    additional_names: bool = True
    excludes: bool = True

    def name_text(self, name: str) -> str:
        return _cohere_escape(name) if self.name == "cohere_xml" else name

    def name_expr(self) -> Expr:
        """The language of additional parameter names (before removing declared/excluded)."""
        return _COHERE_NAME if self.name == "cohere_xml" else _IDENT

    def close(self, name_text: Optional[str]) -> str:
        """The text that closes a value (it starts with ``end``)."""
        if self.name == "minimax_m3_xml":
            return f"]<]minimax[>[</{'item' if name_text is None else name_text}>"
        return self.end

    def wrap(self, name: Optional[Expr], name_text: Optional[str], tag: Optional[str], body: Expr,
             ws: Expr) -> Expr:
        """One parameter (``name`` None: a Cohere list item / MiniMax-M3 ``item``); ``body`` is
        the value and its closing text."""
        s = self.name
        if s == "qwen_xml":
            head = [_b("<parameter="), name, _b(">")]
        elif s == "minimax_xml":
            head = [_b('<parameter name="'), name, _b('">')]
        elif s == "glm_xml":
            head = [_b("<arg_key>"), name, _b("</arg_key>"), ws, _b("<arg_value>")]
        elif s == "kimi_k3_xml":
            head = [_b('<|open|>argument key="'), name, _b(f'" type="{tag}"<|sep|>')]
        elif s in ("deepseek_xml", "deepseek_v4_1_xml"):
            lead = _DSML if s == "deepseek_xml" else _DSML + " "
            head = [_b(f'<{lead}parameter name="'), name, _b(f'" string="{tag}">')]
        elif s == "cohere_xml":
            head = [_b("<cofl:value")] if name is None else [_b('<cofl:value name="'), name, _b('"')]
            head.append(_b(f' type="{tag}">'))
        else:
            assert s == "minimax_m3_xml"
            head = [_b(f"]<]minimax[>[<{'item' if name_text is None else name_text}>")]
        return make_seq(head + [body])


_ALL = ("string",) + _NON_STRING
XML_STYLES: Dict[str, _Style] = {s.name: s for s in (
    _Style("qwen_xml", ((None, _ALL),), "</parameter>"),
    _Style("minimax_xml", ((None, _ALL),), "</parameter>"),
    _Style("glm_xml", ((None, _ALL),), "</arg_value>"),
    _Style("kimi_k3_xml", (("string", ("string",)), ("number", ("number",)), ("boolean", ("boolean",)),
                           ("object", ("object",)), ("array", ("array",)), ("null", ("null",))),
           "<|close|>argument<|sep|>"),
    _Style("deepseek_xml", (("true", ("string",)), ("false", _NON_STRING)), f"</{_DSML}parameter>",
           bare_strings=True),
    _Style("deepseek_v4_1_xml", (("true", ("string",)), ("false", _NON_STRING)), f"</{_DSML} parameter>",
           bare_strings=True),
    _Style("cohere_xml", (("raw", ("string",)), ("json", ("number", "boolean", "null")), ("dict", ("object",)),
                          ("list", ("array",))), "</cofl:value>", nested=True, excludes=False),
    _Style("minimax_m3_xml", ((None, _ALL),), "]<]minimax[>[", bare_strings=True, value_ws=False, nested=True,
           additional_names=False, excludes=False),
)}


class _Builder:
    def __init__(self, parts: SchemaParts, style: _Style, ws: Expr, excludes: Tuple[str, ...], any_order: bool):
        self.parts = parts
        self.style = style
        self.ws = ws
        self.excludes = excludes
        self.any_order = any_order
        self.memo: Dict[tuple, Optional[Expr]] = {}

    # ------------------------------------------------------------------ values
    def kinds(self, part: FrozenSet) -> set:
        out: set = set()
        for b in self.parts.branches(part):
            out |= self.parts.kinds(b)
        return out

    def raw_string(self, part: FrozenSet) -> Tuple[Optional[Expr], bool, bool]:
        """(raw string values at ``part`` or None, whether unconstrained, whether the
        expression includes the closing ``end``).

        An unconstrained string without excludes is built together with the ``end`` that
        closes it (the texts whose first ``end`` is at their end): one automaton whose states
        know where the value stops, much cheaper to classify than a string rule that may end
        anywhere."""
        sv = self.parts.string_view(part)
        if sv is None:
            return None, False, False
        words = [self.style.end] + (list(self.excludes) if sv.filtered else [])
        closed = sv.dfa is None and len(words) == 1
        key = ("raw", tuple(words))  # unconstrained strings share one rule
        if sv.dfa is None and key in self.memo:
            return self.memo[key], sv.plain, closed
        if closed:
            d = until_first(self.style.end)
        else:
            d = exclude_words(_ANY_TEXT if sv.dfa is None else sv.dfa, words)
        e = automaton_rules(d, self.parts.sink, "xml_string")
        if sv.dfa is None:
            self.memo[key] = e
        return e, sv.plain, closed

    def group_value(self, part: FrozenSet, kinds: Sequence[str], have: set, close: str,
                    hint: str) -> Optional[Expr]:
        """The values of ``kinds`` at ``part``, each followed by its ``close`` text."""
        st, ws = self.style, self.ws
        alts: List[Expr] = []
        if "string" in kinds and "string" in have:
            raw, plain, closed = self.raw_string(part)
            if raw is not None and closed:  # bare, built with the end
                rest = close[len(st.end):]
                alts.append(make_seq([raw, _b(rest)]) if rest else raw)
            elif raw is not None:
                alts.append(make_seq([raw if plain or st.bare_strings else make_seq([ws, raw, ws]), _b(close)]))
        tail = len(alts)
        nested = [k for k in kinds if st.nested and k in ("object", "array") and k in have]
        json_kinds = [k for k in kinds if k != "string" and k not in nested and k in have]
        if json_kinds:
            v = self.parts.value(part, json_kinds, hint)
            if v is not None:
                alts.append(make_seq([ws, v, ws]) if st.value_ws else v)
        for k in nested:
            v = self.nested_object(part, hint) if k == "object" else self.nested_array(part, hint)
            if v is not None:
                alts.append(v)
        alts[tail:] = [make_seq([a, _b(close)]) for a in alts[tail:]]
        return make_choice(alts) if alts else None

    def parameter(self, name: Optional[Expr], name_text: Optional[str], part: FrozenSet, hint: str) -> Optional[Expr]:
        """One parameter (or list item) whose value satisfies ``part``."""
        have = self.kinds(part)
        alts = []
        close = self.style.close(name_text)
        for tag, kinds in self.style.groups:
            v = self.group_value(part, kinds, have, close, hint)
            if v is not None:
                alts.append(self.style.wrap(name, name_text, tag, v, self.ws))
        return make_choice(alts) if alts else None

    # ------------------------------------------------------------------ nesting (cohere, m3)
    def nested_object(self, part: FrozenSet, hint: str) -> Optional[Expr]:
        key = ("obj", part)
        if key not in self.memo:
            name = self.parts.fresh(f"{hint}_object")
            self.memo[key] = RuleRef(name)
            alts = [e for e in (self.object_body(v, hint)
                                for v in (self.parts.object_view(b) for b in self.parts.branches(part))
                                if v is not None) if e is not None]
            self.parts.define(name, make_choice(alts) if alts else CharClass(()))
            if not alts:
                self.memo[key] = None
        return self.memo[key]

    def nested_array(self, part: FrozenSet, hint: str) -> Optional[Expr]:
        key = ("arr", part)
        if key not in self.memo:
            name = self.parts.fresh(f"{hint}_list")
            self.memo[key] = RuleRef(name)
            alts = []
            for b in self.parts.branches(part):
                view = self.parts.array_view(b)
                if view is None:
                    continue
                item_part, lo, hi = view
                item = self.parameter(None, None, item_part, f"{hint}_item") if hi != 0 else None
                alts.append(self.items(item, lo, hi))
            alts = [a for a in alts if a is not None]
            self.parts.define(name, make_choice(alts) if alts else CharClass(()))
            if not alts:
                self.memo[key] = None
        return self.memo[key]

    def items(self, item: Optional[Expr], lo: int, hi: Optional[int]) -> Optional[Expr]:
        ws = self.ws
        if item is None:
            return (ws if self.style.name == "cohere_xml" else EPSILON) if lo == 0 else None
        if self.style.name == "cohere_xml":  # items side by side, whitespace around the list
            return make_seq([ws, Repeat(item, lo, hi), ws])
        step = make_seq([ws, item])  # MiniMax-M3: "" or (ws item)+ ws
        body = make_seq([Repeat(step, max(lo, 1), hi), ws])
        return make_choice([EPSILON, body]) if lo == 0 else body

    # ------------------------------------------------------------------ objects
    def additional_name(self, declared: Sequence[str]) -> Optional[Expr]:
        st = self.style
        d = dfa_from_expr(st.name_expr())
        texts = [st.name_text(n) for n in declared]
        if texts:
            d = dfa_product(d, dfa_literals(texts), "diff")
        d = exclude_words(d, self.excludes)
        return dfa_to_expr(d, self.parts.sink, "xml_name")

    def object_body(self, view, hint: str) -> Optional[Expr]:
        """The parameters of one object: ``(ws parameter)* ws`` in declaration order (or any
        order), required ones present, counts within min/maxProperties."""
        st, ws = self.style, self.ws
        members: List[Tuple[Expr, bool]] = []
        for name, part, req in view.members:
            ok = not contains_any(name, self.excludes)
            text = st.name_text(name)
            m = self.parameter(_b(text), name, part, f"{hint}_{name}") if ok else None
            if m is None:
                if req:
                    return None
                continue
            members.append((make_seq([ws, m]), req))
        addl = None
        if view.additional is not None and not st.additional_names:
            if view.additional_declared:
                raise UnsupportedSchemaError(f"{st.name} needs fixed parameter names: additionalProperties "
                                             "is not supported", view.pointer)
            # (as XGrammar) an object without additionalProperties has its declared members only
        elif view.additional is not None:
            key = self.additional_name([n for n, _, _ in view.members])
            if key is not None:
                m = self.parameter(key, None, view.additional, f"{hint}_addl")
                if m is not None:
                    addl = make_seq([ws, m])
        seq = _Sequence(self.parts, members, addl, view.min_props, view.max_props, self.any_order, hint, view.pointer)
        nonempty, empty_ok = seq.build()
        alts = []
        if nonempty is not None:
            alts.append(make_seq([nonempty, ws]))
        if empty_ok:
            alts.append(EPSILON if st.name == "minimax_m3_xml" else ws)
        return make_choice(alts) if alts else None


class _Sequence:
    """Member sequences as rules over states (position or set of members written, count):
    declared members in order (or any order), then additional members."""

    def __init__(self, parts, members, addl, lo, hi, any_order, hint, pointer):
        self.parts = parts
        self.members = members
        self.addl = addl
        self.lo = lo
        self.hi = hi
        self.any_order = any_order and (len(members) > 1 or (members and addl is not None))
        self.hint = hint
        self.names: Dict[tuple, str] = {}
        self.todo: List[tuple] = []
        self.req_mask = 0
        for i, (_, r) in enumerate(members):
            if r:
                self.req_mask |= 1 << i
        if self.any_order and len(members) > MAX_ANY_ORDER_PROPERTIES:
            raise UnsupportedSchemaError(f"any_order supports at most {MAX_ANY_ORDER_PROPERTIES} declared "
                                         "parameters per object", pointer)

    def build(self) -> Tuple[Optional[Expr], bool]:
        empty_ok = self.lo == 0 and self.req_mask == 0
        lo = max(self.lo, 1)
        if self.hi is not None and self.hi < lo:
            return None, empty_ok
        self.need = lo
        self.cap = self.hi if self.hi is not None else lo
        start = self.ref((0, 0))
        while self.todo:
            st = self.todo.pop()
            self.parts.define(self.names[st], self.body(st))
        return start, empty_ok

    def ref(self, st: tuple) -> Optional[Expr]:
        pos, c = st
        if self.hi is not None and c > self.hi:
            return None
        st = (pos, min(c, self.cap))
        if st not in self.names:
            self.names[st] = self.parts.fresh(f"{self.hint}_params")
            self.todo.append(st)
        return RuleRef(self.names[st])

    def body(self, st: tuple) -> Expr:
        pos, c = st
        alts: List[Expr] = []
        n = len(self.members)
        if self.any_order:
            done = (pos & self.req_mask) == self.req_mask
            for i, (m, _) in enumerate(self.members):
                if not pos & (1 << i):
                    nxt = self.ref((pos | (1 << i), c + 1))
                    if nxt is not None:
                        alts.append(make_seq([m, nxt]))
        else:
            done = pos == n
            if pos < n:
                m, req = self.members[pos]
                nxt = self.ref((pos + 1, c + 1))
                if nxt is not None:
                    alts.append(make_seq([m, nxt]))
                if not req:
                    skip = self.ref((pos + 1, c))
                    if skip is not None:
                        alts.append(skip)
        if self.addl is not None and (self.any_order or pos == n):
            nxt = self.ref((pos, c + 1))
            if nxt is not None:
                alts.append(make_seq([self.addl, nxt]))
        if done and c >= self.need:
            alts.append(EPSILON)
        return make_choice(alts) if alts else CharClass(())


def xml_arguments_grammar(schema, style: str, *, any_order: bool = False, max_whitespace_cnt: Optional[int] = None,
                          excludes: Sequence[str] = (), limits=None) -> Grammar:
    """The grammar of the arguments object ``schema`` written in XML ``style`` (a key of
    :data:`XML_STYLES`; options checked by :mod:`.schema_styles`).

    Example::

        >>> g = xml_arguments_grammar({"type": "object", "properties": {"n": {"type": "integer"}}},
        ...                           "deepseek_xml")
        >>> from xmask.grammar.recognizer import Recognizer
        >>> Recognizer(g).accepts('<｜DSML｜parameter name="n" string="false">7</｜DSML｜parameter>'.encode())
        True
    """
    st = XML_STYLES[style]
    excludes = tuple(excludes)
    parts = SchemaParts(schema, any_whitespace=True, max_whitespace_cnt=max_whitespace_cnt, strict_mode=True,
                        any_order=any_order, excludes=excludes, limits=limits)
    ws = Repeat(_WS, 0, max_whitespace_cnt)
    b = _Builder(parts, st, ws, excludes, any_order)
    alts = []
    seen_object = False
    for branch in parts.branches(parts.root):
        seen_object = seen_object or "object" in parts.kinds(branch)
        view = parts.object_view(branch)
        if view is None:
            continue
        e = b.object_body(view, "root")
        if e is not None:
            alts.append(e)
    if not seen_object:
        raise UnsupportedSchemaError(f"{style} writes an arguments object: the schema must allow objects",
                                     parts.pointer(parts.root))
    rules = parts.rules()
    rules["root"] = make_choice(alts) if alts else CharClass(())
    return Grammar(rules, root="root")
