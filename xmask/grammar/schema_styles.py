"""The content grammar of structural tags' ``json_schema`` format, in every XGrammar 0.2.8
style: ``json`` and the XML argument styles of :mod:`.xml_arguments`.

``json``: the schema's JSON text as :func:`~xmask.Grammar.from_json_schema` builds it with
XGrammar's structural-tag settings (``any_whitespace=True``, ``strict_mode=True``: any JSON
whitespace inside objects and arrays, none before or after the value, no undeclared
properties unless the schema allows them).  ``max_whitespace_cnt`` bounds every whitespace
run; ``any_order`` lets object members come in any order (exactly: required members
present, none repeated).

``excludes``: non-empty substrings that never occur in a string value without ``pattern``/
``format`` or in a property name (parameter name), nested values included.  Matching is on
the emitted text (JSON escapes as written, XML values raw), across token boundaries;
``const``/``enum`` values containing one are removed.  Exact where XGrammar loosens: string
``minLength``/``maxLength`` are kept (XGrammar drops them with a warning).  XML styles reject
exclusions that start or end with whitespace; ``cohere_xml`` and ``minimax_m3_xml`` reject
any.

Example::

    >>> from xmask.grammar.recognizer import Recognizer
    >>> tool = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    >>> r = Recognizer(json_schema_format_grammar(tool, excludes=["DROP"]))
    >>> r.accepts(b'{"q": "select"}'), r.accepts(b'{"q": "DROP table"}')
    (True, False)
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import InvalidStructuralTagError
from .ir import Grammar
from .json_schema import json_schema_to_grammar
from .xml_arguments import XML_STYLES, xml_arguments_grammar

__all__ = ["STYLES", "json_schema_format_grammar"]

#: The ``style`` values of XGrammar 0.2.8's ``JSONSchemaFormat``.
STYLES = ("json",) + tuple(XML_STYLES)

_PADDING = " \t\n\r"  # "formatting whitespace" an XML exclusion may not start or end with


def _join(path: str, field: str) -> str:
    if not path:
        return field
    return f"{path}{field}" if field.startswith("[") else f"{path}.{field}"


def _check_options(style, any_order, max_whitespace_cnt, excludes, path: str) -> tuple:
    if not isinstance(style, str) or style not in STYLES:
        raise InvalidStructuralTagError(f"unknown json_schema style {style!r}; expected one of "
                                        f"{', '.join(STYLES)}", _join(path, "style"))
    if not isinstance(any_order, bool):
        raise InvalidStructuralTagError(f"any_order must be a boolean, not {any_order!r}",
                                        _join(path, "any_order"))
    if max_whitespace_cnt is not None and (type(max_whitespace_cnt) is not int or max_whitespace_cnt <= 0):
        raise InvalidStructuralTagError(f"max_whitespace_cnt must be a positive integer or None, not "
                                        f"{max_whitespace_cnt!r}", _join(path, "max_whitespace_cnt"))
    if isinstance(excludes, (str, bytes)) or not isinstance(excludes, (list, tuple)):
        raise InvalidStructuralTagError(f"excludes must be a list of non-empty strings, not {excludes!r}",
                                        _join(path, "excludes"))
    for i, w in enumerate(excludes):
        where = _join(path, f"excludes[{i}]")
        if not isinstance(w, str) or not w:
            raise InvalidStructuralTagError(f"excludes must be a list of non-empty strings, not {w!r}", where)
        if style != "json" and (w[0] in _PADDING or w[-1] in _PADDING):
            raise InvalidStructuralTagError(f"an exclusion of an XML style must not start or end with "
                                            f"whitespace: {w!r}", where)
    if excludes and style != "json" and not XML_STYLES[style].excludes:
        raise InvalidStructuralTagError(f"excludes are not supported with style {style!r}",
                                        _join(path, "excludes"))
    return tuple(excludes)


def json_schema_format_grammar(schema, *, style: str = "json", any_order: bool = False,
                               max_whitespace_cnt: Optional[int] = None, excludes: Sequence[str] = (),
                               path: str = "", limits=None) -> Grammar:
    """The grammar of a structural tag's ``json_schema`` content in ``style``.

    ``path`` (the format's place in the structural tag, e.g. ``format.elements[0]``)
    prefixes the path of ``InvalidStructuralTagError`` for malformed options; schema errors
    raise ``InvalidSchemaError`` / ``UnsupportedSchemaError`` with the JSON pointer.

    Example::

        >>> from xmask.grammar.recognizer import Recognizer
        >>> g = json_schema_format_grammar({"type": "object", "properties": {"n": {"type": "integer"}},
        ...                                 "required": ["n"]}, style="glm_xml")
        >>> Recognizer(g).accepts(b"<arg_key>n</arg_key>\\n<arg_value>42</arg_value>")
        True
    """
    excludes = _check_options(style, any_order, max_whitespace_cnt, excludes, path)
    if style == "json":
        return json_schema_to_grammar(schema, any_whitespace=True, strict_mode=True,
                                      max_whitespace_cnt=max_whitespace_cnt, any_order=any_order,
                                      excludes=excludes, limits=limits)
    return xml_arguments_grammar(schema, style, any_order=any_order, max_whitespace_cnt=max_whitespace_cnt,
                                 excludes=excludes, limits=limits)
