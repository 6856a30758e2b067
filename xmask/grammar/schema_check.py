"""Well-formedness of JSON Schema keywords: a keyword whose value has the wrong JSON type is an
error, never silently ignored (ignoring ``"properties": "x"`` would accept any object).

:func:`check_keywords` checks the keywords of one schema object (what the draft 2020-12
meta-schema requires of them, plus the older forms the converter reads: ``items: [...]``,
``additionalItems``, ``definitions``, ``dependencies``, boolean ``exclusiveMinimum``/
``exclusiveMaximum``) and returns its subschemas, so a walker visits each schema once.
Unknown keywords, annotations and ``const``/``enum`` members are values, not schemas, and
are never walked into (``enum`` members must still be JSON values).  Draft-3 shapes
(``required: true``, schemas in ``type``, string ``dependencies``) are left to the converter,
which reports draft 3 as unsupported.

Example::

    >>> check_keywords({"type": "object", "properties": {"a": {"type": "string"}}}, "#", 2020)
    [({'type': 'string'}, '#/properties/a')]
    >>> try:
    ...     check_keywords({"properties": "x"}, "#/$defs/t", 2020)
    ... except InvalidSchemaError as e:
    ...     e.path
    '#/$defs/t/properties'
"""

from __future__ import annotations

import functools
import json
import math
import re
from fractions import Fraction
from typing import Any, List, Optional, Tuple

from .._caller_warning import warn_from_caller
from ..errors import InvalidJSONError, InvalidSchemaError, SchemaKeywordWarning, UnsupportedSchemaError

__all__ = ["HugeNumber", "check_keywords", "check_json_value", "is_count", "is_schema",
           "parse_schema_text", "warn_keyword_ignored"]


class HugeNumber(float):
    """A JSON number of the schema text beyond the double range (``1e400``): valid JSON that
    xmask does not support; kept (as an infinite float with its ``text``) until the keyword
    holding it is known, so the error names its JSON pointer."""

    text: str

    def __new__(cls, text: str):
        self = super().__new__(cls, float(text))
        self.text = text
        return self


def _parse_float(text: str) -> float:
    v = float(text)
    return v if math.isfinite(v) else HugeNumber(text)


# a JSON string, or one of Python's non-JSON constants outside strings
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _reject_constant(text: str):
    def hook(name: str):
        raise _constant_error(text, name)
    return hook


def _constant_error(text: str, name: str) -> InvalidJSONError:
    pos = next((m.start(1) for m in _CONSTANT.finditer(text) if m.group(1)), None)
    where = ""
    if pos is not None:
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        where = f": line {line} column {col} (char {pos})"
    return InvalidJSONError(f"invalid JSON Schema text: {name} is not a JSON value{where}", position=pos)


class _Constant(Exception):
    """A non-JSON constant met by the shared decoder (its name in ``args[0]``)."""


def _raise_constant(name: str):
    raise _Constant(name)


# one decoder for every schema text (``json.loads`` with hooks builds one per call)
_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_constant=_raise_constant)


def parse_schema_text(text: str):
    """Parse schema JSON text strictly: ``NaN``/``Infinity`` (which Python's ``json`` reads)
    raise :class:`~xmask.errors.InvalidJSONError` with their line and column; numbers beyond
    the double range become :class:`HugeNumber`.

    Example::

        >>> parse_schema_text('{"minimum": NaN}')
        Traceback (most recent call last):
        ...
        xmask.errors.InvalidJSONError: invalid JSON Schema text: NaN is not a JSON value: line 1 column 13 (char 12)
    """
    try:
        if type(text) is str and not text.startswith("\ufeff"):
            try:
                return _DECODER.decode(text)
            except _Constant as c:
                raise _constant_error(text, c.args[0]) from None
        return json.loads(text, parse_float=_parse_float, parse_constant=_reject_constant(text))
    except json.JSONDecodeError as e:
        raise InvalidJSONError(f"invalid JSON Schema text: {e}", position=e.pos) from None
    except RecursionError:
        raise InvalidJSONError("invalid JSON Schema text: nested too deeply to parse") from None


def _bad_number(v, path: str, what: str):
    """The error for a non-finite float: unsupported when it was a huge number of the text."""
    if isinstance(v, HugeNumber):
        return UnsupportedSchemaError(f"the number {v.text[:40]} is beyond the double range", path)
    return InvalidSchemaError(f"{what}, got {_kind(v)}", path)

_TYPE_NAMES = frozenset(("null", "boolean", "object", "array", "string", "integer", "number",
                         "any"))  # "any": the draft-3 name, read by the converter
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
           "minContains", "maxContains")
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRINGS = ("pattern", "format", "$ref")
_SINGLES = ("additionalProperties", "unevaluatedProperties", "propertyNames", "additionalItems",
            "unevaluatedItems", "contains", "not", "if", "then", "else", "contentSchema")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS = ("allOf", "anyOf", "oneOf")
# keywords checked by _check_value / holding subschemas; every other keyword is a value
_VALUE_KEYWORDS = frozenset(("type", "uniqueItems", "enum", "const", "required", "dependentRequired")
                            + _COUNTS + _NUMBERS + _STRINGS)
_SCHEMA_KEYWORDS = frozenset(("dependencies", "items", "prefixItems") + _SINGLES + _MAPS + _LISTS)


# keywords that are neither checked nor walked (annotations, identifiers, other drafts'
# spellings, common extensions): never reported as near-misses of another keyword
_OTHER_KEYWORDS = frozenset((
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef",
    "$recursiveAnchor", "$vocabulary", "$comment", "title", "description", "default", "examples",
    "example", "readOnly", "writeOnly", "deprecated", "contentEncoding", "contentMediaType",
    "nullable", "discriminator", "xml", "externalDocs", "strict"))
# near-misses are looked for among the keywords that change the language only: a misspelt
# annotation ("descripton") changes nothing
_LANGUAGE_KEYWORDS = tuple(sorted(_VALUE_KEYWORDS | _SCHEMA_KEYWORDS))


def _distance(a: str, b: str, limit: int) -> int:
    """Case-insensitive Damerau-Levenshtein distance (an adjacent swap counts 1), or
    ``limit + 1`` as soon as it must exceed ``limit``.

    Only the band of cells within ``limit`` of the diagonal is computed, every value capped at
    ``limit + 1`` (a cell off the band is at least its distance from the diagonal; capping
    commutes with the recurrence's min and +1, so the capped answer is exact)."""
    a, b = a.lower(), b.lower()
    la, lb = len(a), len(b)
    if abs(la - lb) > limit:
        return limit + 1
    if a == b:
        return 0
    cap = limit + 1
    if limit == 0:
        return cap
    prev2: Optional[List[int]] = None
    prev = [j if j < cap else cap for j in range(lb + 1)]
    for i in range(1, la + 1):
        ai = a[i - 1]
        lo, hi = max(1, i - limit), min(lb, i + limit)
        cur = [cap] * (lb + 1)
        cur[0] = i if i < cap else cap
        row_min = cur[0] if lo == 1 else cap
        for j in range(lo, hi + 1):
            v = prev[j - 1] + (ai != b[j - 1])
            if prev[j] + 1 < v:
                v = prev[j] + 1
            if cur[j - 1] + 1 < v:
                v = cur[j - 1] + 1
            if prev2 is not None and j > 1 and ai == b[j - 2] and a[i - 2] == b[j - 1] and prev2[j - 2] + 1 < v:
                v = prev2[j - 2] + 1
            if v > cap:
                v = cap
            cur[j] = v
            if v < row_min:
                row_min = v
        if row_min > limit:
            return cap
        prev2, prev = prev, cur
    return min(prev[-1], cap)


def warn_keyword_ignored(k: str, ptr: str, why: str) -> None:
    """A ``SchemaKeywordWarning`` that the keyword ``k`` of the schema object at ``ptr`` is
    ignored, and ``why``; it points at the user's line.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     warn_keyword_ignored("if", "#", "draft-04 has no such keyword")
        >>> str(w[0].message)
        "JSON Schema keyword 'if' at #/if is ignored: draft-04 has no such keyword"
    """
    warn_from_caller(f"JSON Schema keyword {k!r} at {ptr}/{_esc(k)} is ignored: {why}",
                     SchemaKeywordWarning)


def _warn_near_miss(k: str, ptr: str) -> None:
    """Warn when the unknown keyword ``k`` looks like a misspelt keyword that changes the
    language (``propertes``, ``maxLenght``, ``ref`` for ``$ref``).  Allowed edits grow with the
    word (case only up to 4 characters, 1 edit up to 7, else 2), so short unrelated names do
    not match; ``_``/``@``/``x-`` prefixed keys are deliberate extensions and never match."""
    if not k or k[0] in "_@" or k.startswith("x-"):
        return
    if "$" + k in _SCHEMA_KEYWORDS or "$" + k in _VALUE_KEYWORDS:
        dist, match = 0, "$" + k
    else:
        match = _closest_keyword(k)
        if match is None:
            return
    warn_from_caller(f"unknown JSON Schema keyword {k!r} at {ptr}/{_esc(k)} is ignored; did you "
                     f"mean {match!r}?", SchemaKeywordWarning)


@functools.lru_cache(maxsize=4096)
def _closest_keyword(k: str):
    """The keyword ``k`` is a near miss of (see :func:`_warn_near_miss`), or None; memoized:
    the same unknown keywords (``example``, ``errorMessage``...) recur in every schema."""
    limit = 0 if len(k) <= 4 else 1 if len(k) <= 7 else 2
    dist, match = min((_distance(k, w, limit), w) for w in _LANGUAGE_KEYWORDS)
    return None if dist > limit else match


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def json_kind(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, float) and not math.isfinite(v):
        return f"the non-finite number {v!r}"
    if isinstance(v, (int, float, Fraction)):
        return f"the number {v!r}" if len(repr(v)) <= 20 else "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return f"a {type(v).__name__} (not a JSON value)"


_kind = json_kind


def _is_number(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, (int, Fraction))


def is_count(v) -> bool:
    """A non-negative integer; ``5.0`` is an integer (JSON Schema counts by value)."""
    if isinstance(v, float):
        return math.isfinite(v) and v.is_integer() and v >= 0
    if isinstance(v, Fraction):
        return v.denominator == 1 and v >= 0
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def is_schema(v) -> bool:
    """A schema is an object or a boolean."""
    return isinstance(v, (dict, bool))


def _schema(v, path: str, what: str = "a schema (an object or a boolean)") -> None:
    if not is_schema(v):
        raise InvalidSchemaError(f"expected {what}, got {_kind(v)}", path)


def check_json_value(v, path: str) -> None:
    """``v`` is a JSON value (finite numbers, string keys); for schemas given as Python objects.

    Example::

        >>> check_json_value({"a": [1, float("nan")]}, "#/const")
        Traceback (most recent call last):
        ...
        xmask.errors.InvalidSchemaError: not a JSON value, got the non-finite number nan (at #/const/a/1)
    """
    # Each value's place is (parent place, list index or object key), spelled out only for an
    # error: a pointer string per value cost 3 GB for 120,000 enum values 3,000 levels deep.
    stack: List[Tuple[Any, Any]] = [(v, None)]
    while stack:
        x, w = stack.pop()
        if x is None or isinstance(x, (bool, str, int, Fraction)):
            continue
        if isinstance(x, float):
            if not math.isfinite(x):
                raise _bad_number(x, _pointer(path, w), "not a JSON value")
        elif isinstance(x, list):
            stack.extend((y, (w, i)) for i, y in enumerate(x))
        elif isinstance(x, dict):
            for k, y in x.items():
                if not isinstance(k, str):
                    raise InvalidSchemaError(f"object keys must be strings, got {_kind(k)}",
                                             _pointer(path, w))
                stack.append((y, (w, k)))
        else:
            raise InvalidSchemaError(f"not a JSON value: {_kind(x)}", _pointer(path, w))


def _pointer(path: str, where) -> str:
    # the JSON pointer of a place of check_json_value
    parts = []
    while where is not None:
        where, step = where
        parts.append(f"/{step}" if isinstance(step, int) else f"/{_esc(step)}")
    return path + "".join(reversed(parts))


def _string_array(v, path: str, what: str) -> None:
    if not isinstance(v, list):
        raise InvalidSchemaError(f"{what} must be an array of strings, got {_kind(v)}", path)
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise InvalidSchemaError(f"{what} must be an array of strings, got {_kind(x)}",
                                     f"{path}/{i}")


def check_keywords(obj: dict, ptr: str, draft: int, subschemas: bool = True) -> List[Tuple[Any, str]]:
    """Raise :class:`~xmask.errors.InvalidSchemaError` (with the keyword's JSON pointer) for a
    keyword of the schema object ``obj`` (at ``ptr``) whose value is malformed; return its
    subschemas as ``(schema, pointer)`` pairs (``subschemas=False``: check only, return [])."""
    subs: List[Tuple[Any, str]] = []
    for k, v in obj.items():
        if not isinstance(k, str):
            raise InvalidSchemaError(f"schema keys must be strings, got {_kind(k)}", ptr)
        if k in _VALUE_KEYWORDS:
            _check_value(k, v, ptr, draft)
            continue
        if k not in _SCHEMA_KEYWORDS:
            if k not in _OTHER_KEYWORDS:
                _warn_near_miss(k, ptr)
            continue  # annotations and unknown keywords are values, never checked
        kp = f"{ptr}/{_esc(k)}"
        if k == "dependencies":
            if not isinstance(v, dict):
                raise InvalidSchemaError(f"dependencies must be an object, got {_kind(v)}", kp)
            for name, x in v.items():
                xp = f"{kp}/{_esc(name)}"
                if is_schema(x):
                    subs.append((x, xp))
                elif not (draft == 3 and isinstance(x, str)):
                    _string_array(x, xp, "a dependencies value (or a schema)")
        elif k in _SINGLES:
            _schema(v, kp)
            subs.append((v, kp))
        elif k in _MAPS:
            if not isinstance(v, dict):
                raise InvalidSchemaError(f"{k} must be an object of schemas, got {_kind(v)}", kp)
            for name, x in v.items():
                if not subschemas and type(x) is dict:
                    continue  # (the usual case; pointers are built only when needed)
                _schema(x, f"{kp}/{_esc(name)}")
                subs.append((x, f"{kp}/{_esc(name)}"))
        elif k in _LISTS or k == "prefixItems":
            if not isinstance(v, list) or (k != "prefixItems" and not v):
                what = "a non-empty array" if k != "prefixItems" else "an array"
                raise InvalidSchemaError(f"{k} must be {what} of schemas, got "
                                         f"{'an empty array' if v == [] else _kind(v)}", kp)
            for i, x in enumerate(v):
                _schema(x, f"{kp}/{i}")
                subs.append((x, f"{kp}/{i}"))
        elif k == "items":
            if isinstance(v, list):  # the draft-4..2019-09 tuple form, still read
                for i, x in enumerate(v):
                    _schema(x, f"{kp}/{i}")
                    subs.append((x, f"{kp}/{i}"))
            else:
                _schema(v, kp, "a schema or an array of schemas")
                subs.append((v, kp))
    return subs if subschemas else []


def _check_value(k: str, v, ptr: str, draft: int) -> None:
    """Check one keyword whose value is not a schema (its pointer is built only for errors)."""
    if k == "type":
        if isinstance(v, str) and v in _TYPE_NAMES:
            return  # (the usual case)
        _check_type(v, f"{ptr}/{_esc(k)}", draft)
    elif k in _COUNTS:
        if is_count(v):
            return
        kp = f"{ptr}/{_esc(k)}"
        if isinstance(v, float) and not math.isfinite(v):
            raise _bad_number(v, kp, f"{k} must be a non-negative integer")
        raise InvalidSchemaError(f"{k} must be a non-negative integer, got {_kind(v)}", kp)
    elif k in _NUMBERS:
        if isinstance(v, bool) and k.startswith("exclusive"):
            return  # the draft-4 flag form
        kp = f"{ptr}/{_esc(k)}"
        if isinstance(v, float) and not math.isfinite(v):
            raise _bad_number(v, kp, f"{k} must be a number")
        if not _is_number(v):
            raise InvalidSchemaError(f"{k} must be a number, got {_kind(v)}", kp)
        if k == "multipleOf" and v <= 0:
            raise InvalidSchemaError(f"multipleOf must be greater than 0, got {v!r}", kp)
    elif k in _STRINGS:
        if not isinstance(v, str):
            raise InvalidSchemaError(f"{k} must be a string, got {_kind(v)}", f"{ptr}/{_esc(k)}")
    elif k == "uniqueItems":
        if not isinstance(v, bool):
            raise InvalidSchemaError(f"uniqueItems must be a boolean, got {_kind(v)}", f"{ptr}/{_esc(k)}")
    elif k == "enum":
        kp = f"{ptr}/{_esc(k)}"
        if not isinstance(v, list):
            raise InvalidSchemaError(f"enum must be an array, got {_kind(v)}", kp)
        check_json_value(v, kp)
    elif k == "const":
        check_json_value(v, f"{ptr}/{_esc(k)}")
    elif k == "required":
        if draft == 3 and isinstance(v, bool):
            return  # draft-3 form, unsupported (reported by the converter)
        if isinstance(v, list) and all(type(x) is str for x in v):
            return
        _string_array(v, f"{ptr}/{_esc(k)}", "required")
    elif k == "dependentRequired":
        kp = f"{ptr}/{_esc(k)}"
        if not isinstance(v, dict):
            raise InvalidSchemaError(f"dependentRequired must be an object, got {_kind(v)}", kp)
        for name, x in v.items():
            _string_array(x, f"{kp}/{_esc(name)}", "a dependentRequired value")


def _check_type(v, path: str, draft: int) -> None:
    names = v if isinstance(v, list) else [v]
    if isinstance(v, list) and not v:
        raise InvalidSchemaError("type must be a type name or a non-empty array of them", path)
    if not isinstance(v, (list, str)):
        raise InvalidSchemaError(f"type must be a type name or an array of them, got {_kind(v)}", path)
    for i, t in enumerate(names):
        p = f"{path}/{i}" if isinstance(v, list) else path
        if isinstance(t, str):
            if t not in _TYPE_NAMES:
                raise InvalidSchemaError(f"unknown type {t!r}", p)
        elif not (draft == 3 and isinstance(t, dict)):  # draft-3 union with a schema: unsupported
            raise InvalidSchemaError(f"type names must be strings, got {_kind(t)}", p)
