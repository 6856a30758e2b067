"""The public entry points: a JSON Schema to a grammar, with the lenient report.

Example::

    >>> g, report = json_schema_to_grammar_with_report({"type": "string", "format": "x-unknown"},
    ...                                                lenient=True)
    >>> report
    ["#/format: unknown format 'x-unknown' (dropped)"]
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ..._caller_warning import warn_from_caller
from ...limits import DEFAULT_LIMITS, CompileLimits
from ..ir import Grammar
from .converter import Converter
from .document import load_schema
from .layout import Layout

__all__ = ["json_schema_converter", "json_schema_to_grammar", "json_schema_to_grammar_with_report"]


def json_schema_to_grammar(schema, *, any_whitespace: bool = True, indent: Optional[int] = None,
                           separators: Optional[Tuple[str, str]] = None, strict_mode: bool = True,
                           max_whitespace_cnt: Optional[int] = None, lenient: bool = False,
                           any_order: bool = False, limits: Optional[CompileLimits] = None,
                           excludes: Sequence[str] = ()) -> Grammar:
    """Convert a JSON Schema to a :class:`~xmask.grammar.ir.Grammar`.

    Parameters
    ----------
    schema : str, dict, bool or pydantic model class
        The schema (JSON text, parsed JSON, or a class with ``model_json_schema()``).
    any_whitespace : bool
        Allow any JSON whitespace between tokens inside objects and arrays.
    indent : int, optional
        With ``any_whitespace=False``: ``json.dumps(indent=N)`` layout.
    separators : (str, str), optional
        With ``any_whitespace=False``: item and key separators.
    strict_mode : bool
        Unspecified ``additionalProperties`` (objects with ``properties``) and items after
        ``prefixItems`` default to false (XGrammar); ``False`` gives the spec defaults.
    max_whitespace_cnt : int, optional
        Bound on each whitespace run when ``any_whitespace=True``.
    lenient : bool
        Drop keywords that cannot be enforced (a warning per loosening) instead of raising.
    any_order : bool
        Accept object members in any order (objects with few declared properties).
    limits : xmask.CompileLimits, optional
        Caps on enum size, alternatives and rule count (defaults: ``CompileLimits()``).
    excludes : sequence of str
        Substrings that the JSON text of a string value without ``pattern``/``format``, or
        of a key, never contains (structural tags); ``enum``/``const`` values containing one
        are dropped.

    Raises
    ------
    UnsupportedSchemaError
        A keyword cannot be enforced exactly (``path`` is its JSON pointer).
    InvalidSchemaError
        A keyword's value has the wrong JSON type (``path`` is its JSON pointer); never
        silenced by ``lenient``.
    InvalidJSONError
        Schema text that is not JSON (``NaN``/``Infinity`` included).

    Example::

        >>> print(json_schema_to_grammar({"enum": ["a", 1]}))
        root ::= "\\"a\\"" | "1" | "1.0"
    """
    grammar, report = json_schema_to_grammar_with_report(
        schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
        strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, lenient=lenient,
        any_order=any_order, limits=limits, excludes=excludes)
    for item in report:
        warn_from_caller(f"JSON Schema loosened: {item}")
    return grammar


def json_schema_to_grammar_with_report(schema, *, any_whitespace: bool = True,
                                       indent: Optional[int] = None,
                                       separators: Optional[Tuple[str, str]] = None,
                                       strict_mode: bool = True,
                                       max_whitespace_cnt: Optional[int] = None,
                                       lenient: bool = False,
                                       any_order: bool = False,
                                       limits: Optional[CompileLimits] = None,
                                       excludes: Sequence[str] = ()) -> Tuple[Grammar, List[str]]:
    """Like :func:`json_schema_to_grammar`, also returning the loosenings made in lenient mode
    (``"<json pointer>: <what was dropped>"``; always empty when ``lenient=False``).

    Example::

        >>> g, report = json_schema_to_grammar_with_report(
        ...     {"type": "array", "uniqueItems": True}, lenient=True)
        >>> report
        ['#/uniqueItems: uniqueItems is not enforced (dropped)']
    """
    conv = json_schema_converter(
        schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
        strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, lenient=lenient,
        any_order=any_order, limits=limits, excludes=excludes)
    return conv.run(), list(conv.ctx.report)


def json_schema_converter(schema, *, any_whitespace: bool = True, indent: Optional[int] = None,
                          separators: Optional[Tuple[str, str]] = None, strict_mode: bool = True,
                          max_whitespace_cnt: Optional[int] = None, lenient: bool = False,
                          any_order: bool = False, limits: Optional[CompileLimits] = None,
                          excludes: Sequence[str] = ()) -> Converter:
    """The :class:`Converter` :func:`json_schema_to_grammar` runs (same options), not run yet:
    a lazy compile calls its ``run_partial()`` then ``finish()``.

    Example::

        >>> conv = json_schema_converter({"type": "array", "items": {"type": "string"}})
        >>> rules, pending = conv.run_partial()
        >>> str(conv.finish()) == str(json_schema_to_grammar({"type": "array",
        ...                                                   "items": {"type": "string"}}))
        True
    """
    schema = load_schema(schema)
    if max_whitespace_cnt is not None and max_whitespace_cnt < 0:
        raise ValueError("max_whitespace_cnt must be >= 0")
    return Converter(schema, _layout(any_whitespace, indent, separators, max_whitespace_cnt),
                     strict_mode=strict_mode, lenient=lenient, any_order=any_order,
                     limits=DEFAULT_LIMITS if limits is None else limits, excludes=excludes)


def _layout(any_whitespace, indent, separators, max_whitespace_cnt) -> Layout:
    """``Layout(...)``, shared between conversions with the same plain options (a layout is
    never changed after construction, and building one makes its separator nodes)."""
    plain = ((indent is None or type(indent) is int)
             and (max_whitespace_cnt is None or type(max_whitespace_cnt) is int)
             and (separators is None or (type(separators) is tuple and len(separators) == 2
                                         and all(type(s) is str for s in separators))))
    if not plain:
        return Layout(any_whitespace, indent, separators, max_whitespace_cnt)
    key = (bool(any_whitespace), indent, separators, max_whitespace_cnt)
    hit = _LAYOUTS.get(key)
    if hit is None:
        if len(_LAYOUTS) >= 64:
            _LAYOUTS.clear()  # bounded (option sets are few)
        hit = _LAYOUTS[key] = Layout(any_whitespace, indent, separators, max_whitespace_cnt)
    return hit


_LAYOUTS: Dict[tuple, Layout] = {}
