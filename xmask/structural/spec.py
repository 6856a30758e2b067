"""Parse and validate a structural tag into frozen format objects (no pydantic needed).

Input: JSON text, a dict, or a pydantic model with ``model_dump_json`` (xmask's or XGrammar's
``StructuralTag``); the top level is ``{"type": "structural_tag", "format": {...}}`` (``type``
may be left out) and every format object names its ``type`` (XGrammar's format names; a format
without ``type`` that has ``begin`` / ``content`` / ``end`` is a ``tag``, as in XGrammar).
Unknown fields are ignored, as XGrammar's pydantic models do.

Every problem raises :class:`~xmask.errors.InvalidStructuralTagError` whose ``path`` names the
place (``format.elements[1].begin``); text that is not JSON raises ``InvalidJSONError``.  The
checks follow XGrammar 0.2.8: field types (a bool is not an int), ``repeat`` bounds, non-empty
``sequence`` / ``or`` elements, tag lists, triggers and end lists, a tag's ``begin`` matched by
exactly one trigger, every trigger matching some tag, excluded strings that are not prefixes
of a trigger, ``max_chars`` / ``max_tokens`` in ``[0, 2**31 - 1]``, and a tag whose content is
unbounded (free text, repeats) needing a non-empty end string.

Example::

    >>> st = parse_structural_tag({"format": {"type": "sequence", "elements": [
    ...     {"type": "const_string", "value": "a"}, {"type": "any_text"}]}})
    >>> type(st.format).__name__, st.format.elements[1].path
    ('Sequence', 'format.elements[1]')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple, Union

from ..errors import InvalidJSONError, InvalidStructuralTagError
from ..grammar.schema_check import json_kind as _kind

__all__ = [
    "JSON_SCHEMA_STYLES", "FORMAT_TYPES", "StructuralTagSpec", "parse_structural_tag",
    "is_unlimited", "legacy_structural_tag", "structural_tag_argument", "canonical_json",
    "ConstString", "JSONSchema", "AnyText", "Token", "ExcludeToken", "AnyTokens", "GrammarText",
    "Regex", "Sequence", "Or", "Tag", "TriggeredTags", "TokenTriggeredTags",
    "TagsWithSeparator", "Repeat", "Dispatch", "TokenDispatch",
    "QwenXMLParameter",
]

#: The ``style`` values of the ``json_schema`` format (XGrammar 0.2.8).
JSON_SCHEMA_STYLES = ("json", "qwen_xml", "minimax_xml", "minimax_m3_xml", "deepseek_xml",
                      "glm_xml", "cohere_xml", "kimi_k3_xml", "deepseek_v4_1_xml")

_INT32_MAX = 2_147_483_647

TokenRef = Union[int, str]  # a token id, or a token's text (resolved against a tokenizer)


@dataclass(frozen=True, eq=False)
class _Format:
    path: str = field(repr=False)


@dataclass(frozen=True, eq=False)
class ConstString(_Format):
    value: str


@dataclass(frozen=True, eq=False)
class JSONSchema(_Format):
    json_schema: Any  # bool or dict, as parsed
    style: str = "json"
    any_order: bool = False
    max_whitespace_cnt: Optional[int] = None
    excludes: Tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class QwenXMLParameter(_Format):
    json_schema: Any


@dataclass(frozen=True, eq=False)
class AnyText(_Format):
    excludes: Tuple[str, ...] = ()
    max_tokens: Optional[int] = None
    max_chars: Optional[int] = None


@dataclass(frozen=True, eq=False)
class Token(_Format):
    token: TokenRef


@dataclass(frozen=True, eq=False)
class ExcludeToken(_Format):
    exclude_tokens: Tuple[TokenRef, ...] = ()


@dataclass(frozen=True, eq=False)
class AnyTokens(_Format):
    exclude_tokens: Tuple[TokenRef, ...] = ()
    max_tokens: Optional[int] = None


@dataclass(frozen=True, eq=False)
class GrammarText(_Format):
    grammar: str


@dataclass(frozen=True, eq=False)
class Regex(_Format):
    pattern: str


@dataclass(frozen=True, eq=False)
class Sequence(_Format):
    elements: Tuple[_Format, ...]


@dataclass(frozen=True, eq=False)
class Or(_Format):
    elements: Tuple[_Format, ...]


@dataclass(frozen=True, eq=False)
class Tag(_Format):
    begin: Union[str, Token]
    content: _Format
    end: Union[Tuple[str, ...], Token]  # one or more end strings, or one token


@dataclass(frozen=True, eq=False)
class TriggeredTags(_Format):
    triggers: Tuple[str, ...]
    tags: Tuple[Tag, ...]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: Tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class TokenTriggeredTags(_Format):
    trigger_tokens: Tuple[TokenRef, ...]
    tags: Tuple[Tag, ...]
    exclude_tokens: Tuple[TokenRef, ...] = ()
    at_least_one: bool = False
    stop_after_first: bool = False


@dataclass(frozen=True, eq=False)
class TagsWithSeparator(_Format):
    tags: Tuple[Tag, ...]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


@dataclass(frozen=True, eq=False)
class Repeat(_Format):
    """Also ``optional`` (0..1), ``star`` (0..-1) and ``plus`` (1..-1)."""

    min: int
    max: int  # -1: unbounded
    content: _Format


@dataclass(frozen=True, eq=False)
class Dispatch(_Format):
    rules: Tuple[Tuple[str, _Format], ...]
    loop: bool = True
    excludes: Tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class TokenDispatch(_Format):
    rules: Tuple[Tuple[TokenRef, _Format], ...]
    loop: bool = True
    exclude_tokens: Tuple[TokenRef, ...] = ()


@dataclass(frozen=True, eq=False)
class StructuralTagSpec:
    """A parsed structural tag: its root ``format``."""

    format: _Format


# ------------------------------------------------------------------ field readers


def _err(msg: str, path: str) -> InvalidStructuralTagError:
    return InvalidStructuralTagError(msg, path)


_MISSING = object()


def _get(obj: dict, key: str, path: str, default=_MISSING):
    if key in obj:
        return obj[key]
    if default is _MISSING:
        raise _err(f"missing required field '{key}'", f"{path}.{key}" if path else key)
    return default


def _text(v: str, path: str) -> str:
    """``v`` if UTF-8 can spell it: a lone surrogate (from JSON text like "\\ud800") cannot."""
    for i, ch in enumerate(v):
        if "\ud800" <= ch <= "\udfff":
            raise _err(f"lone surrogate U+{ord(ch):04X} at index {i}: not valid text", path)
    return v


def _str(obj, key, path, default=_MISSING, non_empty=False) -> str:
    v = _get(obj, key, path, default)
    if not isinstance(v, str):
        raise _err(f"'{key}' must be a string, got {_kind(v)}", f"{path}.{key}")
    if non_empty and not v:
        raise _err(f"'{key}' must be a non-empty string", f"{path}.{key}")
    return _text(v, f"{path}.{key}")


def _bool(obj, key, path, default) -> bool:
    v = _get(obj, key, path, default)
    if not isinstance(v, bool):
        raise _err(f"'{key}' must be a boolean, got {_kind(v)}", f"{path}.{key}")
    return v


def _int(obj, key, path, default=_MISSING, *, optional=False, lo=None, hi=None):
    v = _get(obj, key, path, default)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise _err(f"'{key}' must be an integer{' or null' if optional else ''}, got {_kind(v)}",
                   f"{path}.{key}")
    if lo is not None and v < lo:
        raise _err(f"'{key}' must be >= {lo}, got {v}", f"{path}.{key}")
    if hi is not None and v > hi:
        raise _err(f"'{key}' must be <= {hi}, got {v}", f"{path}.{key}")
    return v


def _list(obj, key, path, default=_MISSING, non_empty=False) -> list:
    v = _get(obj, key, path, default)
    if not isinstance(v, (list, tuple)):
        raise _err(f"'{key}' must be an array, got {_kind(v)}", f"{path}.{key}")
    if non_empty and not v:
        raise _err(f"'{key}' must be a non-empty array", f"{path}.{key}")
    return list(v)


def _strings(obj, key, path, default=_MISSING, non_empty_items=False) -> Tuple[str, ...]:
    items = _list(obj, key, path, default)
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise _err(f"'{key}' items must be strings, got {_kind(s)}", f"{path}.{key}[{i}]")
        if non_empty_items and not s:
            raise _err(f"'{key}' items must be non-empty strings", f"{path}.{key}[{i}]")
        _text(s, f"{path}.{key}[{i}]")
    return tuple(items)


def _token_ref(v, path: str) -> TokenRef:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise _err(f"a token must be a token id (integer) or a token string, got {_kind(v)}",
                   path)
    if isinstance(v, int) and v < 0:
        raise _err(f"token ids are non-negative, got {v}", path)
    if isinstance(v, str) and not v:
        raise _err("a token string must be non-empty", path)
    return _text(v, path) if isinstance(v, str) else v


def _token_refs(obj, key, path, default=_MISSING, non_empty=False) -> Tuple[TokenRef, ...]:
    items = _list(obj, key, path, default, non_empty=non_empty)
    return tuple(_token_ref(v, f"{path}.{key}[{i}]") for i, v in enumerate(items))


def _obj(v, path: str, what: str = "a format") -> dict:
    if not isinstance(v, dict):
        raise _err(f"{what} must be a JSON object, got {_kind(v)}", path)
    return v


# ------------------------------------------------------------------ formats


def _parse_format(v, path: str, depth: int = 0) -> _Format:
    if depth > 200:
        raise _err("formats nested more than 200 levels deep", path)
    obj = _obj(v, path)
    if "type" in obj:
        kind = obj["type"]
        if not isinstance(kind, str):
            raise _err(f"'type' must be a string, got {_kind(kind)}", f"{path}.type")
    elif "begin" in obj and "content" in obj and "end" in obj:
        kind = "tag"
    else:
        raise _err("a format needs a 'type' field", path)
    parser = _PARSERS.get(kind)
    if parser is None:
        raise _err(f"unknown format type {kind!r}; expected one of "
                   f"{', '.join(sorted(_PARSERS))}", f"{path}.type")
    return parser(obj, path, depth + 1)


def _sub(obj, key, path, depth) -> _Format:
    return _parse_format(_get(obj, key, path), f"{path}.{key}", depth)


def _p_const(obj, path, depth):
    return ConstString(path, _str(obj, "value", path))


def _schema_value(obj, path):
    v = _get(obj, "json_schema", path)
    if not isinstance(v, (bool, dict)):
        raise _err(f"'json_schema' must be an object or a boolean, got {_kind(v)}",
                   f"{path}.json_schema")
    return v


def _p_json(obj, path, depth):
    style = _str(obj, "style", path, "json")
    if style not in JSON_SCHEMA_STYLES:
        raise _err(f"unknown style {style!r}; expected one of {', '.join(JSON_SCHEMA_STYLES)}",
                   f"{path}.style")
    return JSONSchema(path, _schema_value(obj, path), style, _bool(obj, "any_order", path, False),
                      _int(obj, "max_whitespace_cnt", path, None, optional=True, lo=1),
                      _strings(obj, "excludes", path, (), non_empty_items=True))


def _p_qwen(obj, path, depth):
    return QwenXMLParameter(path, _schema_value(obj, path))


def _p_any_text(obj, path, depth):
    return AnyText(path, _strings(obj, "excludes", path, (), non_empty_items=True),
                   _int(obj, "max_tokens", path, None, optional=True, lo=0, hi=_INT32_MAX),
                   _int(obj, "max_chars", path, None, optional=True, lo=0, hi=_INT32_MAX))


def _p_token(obj, path, depth):
    return Token(path, _token_ref(_get(obj, "token", path), f"{path}.token"))


def _p_exclude_token(obj, path, depth):
    return ExcludeToken(path, _token_refs(obj, "exclude_tokens", path, ()))


def _p_any_tokens(obj, path, depth):
    return AnyTokens(path, _token_refs(obj, "exclude_tokens", path, ()),
                     _int(obj, "max_tokens", path, None, optional=True, lo=0, hi=_INT32_MAX))


def _p_grammar(obj, path, depth):
    return GrammarText(path, _str(obj, "grammar", path))


def _p_regex(obj, path, depth):
    return Regex(path, _str(obj, "pattern", path))


def _elements(obj, path, depth):
    items = _list(obj, "elements", path, non_empty=True)
    return tuple(_parse_format(e, f"{path}.elements[{i}]", depth) for i, e in enumerate(items))


def _p_sequence(obj, path, depth):
    return Sequence(path, _elements(obj, path, depth))


def _p_or(obj, path, depth):
    return Or(path, _elements(obj, path, depth))


def _tag_end(obj, path, depth):
    v = _get(obj, "end", path)
    if isinstance(v, str):
        return (_text(v, f"{path}.end"),)
    if isinstance(v, list):
        if not v:
            raise _err("'end' must not be an empty array", f"{path}.end")
        return _strings(obj, "end", path)
    if isinstance(v, dict):
        return _as_token(v, f"{path}.end", depth)
    raise _err(f"'end' must be a string, an array of strings or a token format, got {_kind(v)}",
               f"{path}.end")


def _as_token(v: dict, path: str, depth) -> Token:
    fmt = _parse_format(v, path, depth)
    if not isinstance(fmt, Token):
        raise _err("must be a string or a token format ({\"type\": \"token\", ...})", path)
    return fmt


def _p_tag(obj, path, depth):
    b = _get(obj, "begin", path)
    if isinstance(b, str):
        begin = _text(b, f"{path}.begin")
    elif isinstance(b, dict):
        begin = _as_token(b, f"{path}.begin", depth)
    else:
        raise _err(f"'begin' must be a string or a token format, got {_kind(b)}",
                   f"{path}.begin")
    content = _sub(obj, "content", path, depth)
    end = _tag_end(obj, path, depth)
    if isinstance(end, tuple) and not any(end) and is_unlimited(content):
        raise _err("the content is unbounded (free text or a repeat), so at least one end "
                   "string must be non-empty", f"{path}.end")
    return Tag(path, begin, content, end)


def _tags(obj, path, depth) -> Tuple[Tag, ...]:
    items = _list(obj, "tags", path, non_empty=True)
    out = []
    for i, t in enumerate(items):
        p = f"{path}.tags[{i}]"
        t = _obj(t, p, "a tag")
        if "type" in t and t["type"] != "tag":
            raise _err(f"tags must be of type 'tag', got {t['type']!r}", f"{p}.type")
        out.append(_p_tag(t, p, depth))
    return tuple(out)


def _check_excludes_vs_triggers(excludes, triggers, path, key="excludes"):
    for i, e in enumerate(excludes):
        for t in triggers:
            if t.startswith(e):
                raise _err(f"excluded string {e!r} is a prefix of trigger {t!r}, which could "
                           f"then never fire", f"{path}.{key}[{i}]")


def _p_triggered(obj, path, depth):
    triggers = _strings(obj, "triggers", path)
    if not triggers:
        raise _err("'triggers' must be a non-empty array", f"{path}.triggers")
    for i, t in enumerate(triggers):
        if not t:
            raise _err("triggers must be non-empty strings", f"{path}.triggers[{i}]")
    tags = _tags(obj, path, depth)
    used = [False] * len(triggers)
    for i, tag in enumerate(tags):
        if not isinstance(tag.begin, str):
            raise _err("tags of triggered_tags need a string 'begin' (use token_triggered_tags "
                       "for token begins)", f"{path}.tags[{i}].begin")
        hits = [k for k, t in enumerate(triggers) if tag.begin.startswith(t)]
        if not hits:
            raise _err(f"tag begin {tag.begin!r} starts with none of the triggers",
                       f"{path}.tags[{i}].begin")
        if len(hits) > 1:
            raise _err(f"tag begin {tag.begin!r} starts with more than one trigger "
                       f"({', '.join(repr(triggers[k]) for k in hits)})",
                       f"{path}.tags[{i}].begin")
        used[hits[0]] = True
    for k, ok in enumerate(used):
        if not ok:
            raise _err(f"trigger {triggers[k]!r} begins no tag", f"{path}.triggers[{k}]")
    excludes = _strings(obj, "excludes", path, (), non_empty_items=True)
    _check_excludes_vs_triggers(excludes, triggers, path)
    return TriggeredTags(path, triggers, tags, _bool(obj, "at_least_one", path, False),
                         _bool(obj, "stop_after_first", path, False), excludes)


def _p_token_triggered(obj, path, depth):
    triggers = _token_refs(obj, "trigger_tokens", path, non_empty=True)
    tags = _tags(obj, path, depth)
    for i, tag in enumerate(tags):
        if not isinstance(tag.begin, Token):
            raise _err("tags of token_triggered_tags need a token 'begin' (use triggered_tags "
                       "for string begins)", f"{path}.tags[{i}].begin")
    return TokenTriggeredTags(path, triggers, tags, _token_refs(obj, "exclude_tokens", path, ()),
                              _bool(obj, "at_least_one", path, False),
                              _bool(obj, "stop_after_first", path, False))


def _p_tags_sep(obj, path, depth):
    return TagsWithSeparator(path, _tags(obj, path, depth), _str(obj, "separator", path),
                             _bool(obj, "at_least_one", path, False),
                             _bool(obj, "stop_after_first", path, False))


def _p_optional(obj, path, depth):
    return Repeat(path, 0, 1, _sub(obj, "content", path, depth))


def _p_plus(obj, path, depth):
    return Repeat(path, 1, -1, _sub(obj, "content", path, depth))


def _p_star(obj, path, depth):
    return Repeat(path, 0, -1, _sub(obj, "content", path, depth))


def _p_repeat(obj, path, depth):
    lo = _int(obj, "min", path, lo=0)
    hi = _int(obj, "max", path, lo=-1)
    if hi != -1 and hi < lo:
        raise _err(f"'max' ({hi}) must be >= 'min' ({lo}), or -1 for no limit", f"{path}.max")
    return Repeat(path, lo, hi, _sub(obj, "content", path, depth))


def _dispatch_rules(obj, path, depth, pattern):
    items = _list(obj, "rules", path, non_empty=True)
    out = []
    for i, r in enumerate(items):
        p = f"{path}.rules[{i}]"
        if not isinstance(r, (list, tuple)) or len(r) != 2:
            raise _err(f"a rule must be a [pattern, format] pair, got {_kind(r)}", p)
        out.append((pattern(r[0], f"{p}[0]"), _parse_format(r[1], f"{p}[1]", depth)))
    return tuple(out)


def _pattern(v, path):
    if not isinstance(v, str) or not v:
        raise _err(f"a dispatch pattern must be a non-empty string, got {v!r}", path)
    return _text(v, path)


def _p_dispatch(obj, path, depth):
    rules = _dispatch_rules(obj, path, depth, _pattern)
    pats = [p for p, _ in rules]
    for i, a in enumerate(pats):
        for j, b in enumerate(pats):
            if i != j and b.startswith(a):
                raise _err(f"pattern {a!r} is a prefix of pattern {b!r} (rules[{j}]): the "
                           f"first occurrence of a pattern fires, so rules[{j}] could never "
                           f"fire", f"{path}.rules[{i}][0]")
    excludes = _strings(obj, "excludes", path, (), non_empty_items=True)
    _check_excludes_vs_triggers(excludes, pats, path)
    return Dispatch(path, rules, _bool(obj, "loop", path, True), excludes)


def _p_token_dispatch(obj, path, depth):
    return TokenDispatch(path, _dispatch_rules(obj, path, depth, _token_ref),
                         _bool(obj, "loop", path, True),
                         _token_refs(obj, "exclude_tokens", path, ()))


_PARSERS = {
    "const_string": _p_const, "json_schema": _p_json, "qwen_xml_parameter": _p_qwen,
    "any_text": _p_any_text, "token": _p_token, "exclude_token": _p_exclude_token,
    "any_tokens": _p_any_tokens, "grammar": _p_grammar, "regex": _p_regex,
    "sequence": _p_sequence, "or": _p_or, "tag": _p_tag, "triggered_tags": _p_triggered,
    "token_triggered_tags": _p_token_triggered, "tags_with_separator": _p_tags_sep,
    "optional": _p_optional, "plus": _p_plus, "star": _p_star, "repeat": _p_repeat,
    "dispatch": _p_dispatch, "token_dispatch": _p_token_dispatch,
}

#: Every format ``type`` a structural tag may use.
FORMAT_TYPES = tuple(sorted(_PARSERS))

_UNLIMITED = (AnyText, AnyTokens, TriggeredTags, TokenTriggeredTags, TagsWithSeparator,
              Dispatch, TokenDispatch)


def is_unlimited(fmt: _Format) -> bool:
    """True when ``fmt`` has no fixed end of its own (XGrammar's rule: free text, token runs,
    tag lists and open repeats), so a tag around it needs a non-empty end string."""
    if isinstance(fmt, _UNLIMITED):
        return True
    if isinstance(fmt, Repeat):
        return fmt.max == -1 or is_unlimited(fmt.content)
    if isinstance(fmt, (Sequence, Or)):
        return any(is_unlimited(e) for e in fmt.elements)
    return False


# ------------------------------------------------------------------ entry point


def _as_document(structural_tag) -> Any:
    if isinstance(structural_tag, (bytes, bytearray)):
        structural_tag = structural_tag.decode("utf-8", errors="strict")
    if isinstance(structural_tag, str):
        try:
            return json.loads(structural_tag)
        except json.JSONDecodeError as e:
            raise InvalidJSONError(f"structural tag is not valid JSON: {e}",
                                   position=e.pos) from None
        except RecursionError:
            raise InvalidJSONError("structural tag JSON is nested too deeply") from None
    if isinstance(structural_tag, dict):
        return structural_tag
    if hasattr(structural_tag, "model_dump_json"):  # xmask's or XGrammar's pydantic model
        return json.loads(structural_tag.model_dump_json(by_alias=True))
    raise TypeError("a structural tag must be JSON text, a dict or a StructuralTag, not "
                    f"{type(structural_tag).__name__}")


def canonical_json(structural_tag) -> str:
    """``structural_tag`` (JSON text, dict or ``StructuralTag``) as compact JSON text with its
    key order kept: the cache key of a compiled structural tag."""
    return json.dumps(_as_document(structural_tag), separators=(",", ":"), ensure_ascii=False)


def parse_structural_tag(structural_tag) -> StructuralTagSpec:
    """Parse and validate ``structural_tag`` (JSON text, dict or pydantic ``StructuralTag``).

    Example::

        >>> parse_structural_tag('{"format": {"type": "repeat", "min": 2, "max": 1, '
        ...                      '"content": {"type": "const_string", "value": "a"}}}')
        Traceback (most recent call last):
            ...
        xmask.errors.InvalidStructuralTagError: 'max' (1) must be >= 'min' (2), or -1 for no limit (at format.max)
    """
    doc = _obj(_as_document(structural_tag), "", "a structural tag")
    if "type" in doc and doc["type"] != "structural_tag":
        raise _err(f"the top level 'type' must be \"structural_tag\", got {doc['type']!r}",
                   "type")
    return StructuralTagSpec(_parse_format(_get(doc, "format", ""), "format"))


def _legacy_item(tag, path: str) -> dict:
    if isinstance(tag, dict):
        begin, schema, end = (tag.get("begin"), tag.get("schema", tag.get("schema_")),
                              tag.get("end"))
    else:
        begin, end = getattr(tag, "begin", None), getattr(tag, "end", None)
        schema = getattr(tag, "schema_", getattr(tag, "schema", None))
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise InvalidJSONError(f"the schema of {path} is not valid JSON: {e}",
                                   position=e.pos) from None
    elif isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    return {"type": "tag", "begin": begin, "end": end,
            "content": {"type": "json_schema", "json_schema": schema}}


def legacy_structural_tag(tags, triggers) -> dict:
    """The structural tag of XGrammar's legacy ``(tags, triggers)`` form (``tags``:
    ``StructuralTagItem``s or ``{"begin", "schema", "end"}`` dicts; a schema may be JSON text,
    a dict or a pydantic model class): ``triggered_tags`` of ``begin json_schema end`` tags.

    Example::

        >>> legacy_structural_tag([{"begin": "<f>", "schema": {}, "end": "</f>"}], ["<f"])["format"]["type"]
        'triggered_tags'
    """
    items = [_legacy_item(t, f"tags[{i}]") for i, t in enumerate(tags)]
    return {"type": "structural_tag",
            "format": {"type": "triggered_tags", "triggers": list(triggers), "tags": items}}


def structural_tag_argument(args, kwargs):
    """The structural tag of a ``from_structural_tag`` / ``compile_structural_tag`` call:
    ``(structural_tag)`` (JSON text, dict or ``StructuralTag``), or the legacy
    ``(tags, triggers)``, positional or by keyword (XGrammar's calling conventions)."""
    if len(args) == 1 and not kwargs:
        return args[0]
    if len(args) == 2 and not kwargs:
        return legacy_structural_tag(*args)
    if not args and set(kwargs) == {"structural_tag"}:
        return kwargs["structural_tag"]
    if not args and set(kwargs) == {"tags", "triggers"}:
        return legacy_structural_tag(kwargs["tags"], kwargs["triggers"])
    if len(args) == 1 and set(kwargs) == {"triggers"}:
        return legacy_structural_tag(args[0], kwargs["triggers"])
    raise TypeError("expected (structural_tag) or the legacy (tags, triggers)")
