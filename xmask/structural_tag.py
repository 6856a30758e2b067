"""Structural-tag formats as pydantic models, with XGrammar 0.2.8's names, fields and defaults
(``xgrammar.structural_tag``), so code that builds structural tags for XGrammar runs unchanged.

This is the only xmask module that imports pydantic; ``xmask.StructuralTag`` and
``xmask.StructuralTagItem`` load it on first use.  Compiling does not need it: a structural
tag given as JSON text or a dict is parsed by :mod:`xmask.structural.spec`, which also checks
everything these models leave open (trigger/tag matching, repeat bounds, non-empty lists) and
names the JSON path of each problem.

Example::

    >>> from xmask.structural_tag import StructuralTag, TagFormat, JSONSchemaFormat, TriggeredTagsFormat
    >>> st = StructuralTag(format=TriggeredTagsFormat(triggers=["<function="], tags=[
    ...     TagFormat(begin="<function=f>", content=JSONSchemaFormat(json_schema={"type": "object"}),
    ...               end="</function>")]))
    >>> StructuralTag.from_json(st.model_dump_json()) == st
    True
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, Type, Union

from pydantic import BaseModel, Field

try:
    from typing import Annotated
except ImportError:  # Python 3.8
    from typing_extensions import Annotated

__all__ = [
    "ConstStringFormat", "JSONSchemaFormat", "QwenXMLParameterFormat", "AnyTextFormat",
    "GrammarFormat", "RegexFormat", "TokenFormat", "ExcludeTokenFormat", "AnyTokensFormat",
    "SequenceFormat", "OrFormat", "TagFormat", "TriggeredTagsFormat", "TokenTriggeredTagsFormat",
    "TagsWithSeparatorFormat", "OptionalFormat", "PlusFormat", "StarFormat", "RepeatFormat",
    "DispatchFormat", "TokenDispatchFormat", "Format", "StructuralTagItem", "StructuralTag",
]

_INT32_MAX = 2_147_483_647

TokenRef = Union[int, str]


# ---------------------------------------------------------------- leaf formats


class ConstStringFormat(BaseModel):
    """Exactly the string ``value``."""

    type: Literal["const_string"] = "const_string"
    value: str


class JSONSchemaFormat(BaseModel):
    """A value of ``json_schema`` written in ``style`` (``"json"``, or one of the XML
    argument styles of tool-calling models); ``excludes`` are substrings that string values
    and property names must not contain."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: Union[bool, Dict[str, Any]]
    style: Literal["json", "qwen_xml", "minimax_xml", "minimax_m3_xml", "deepseek_xml",
                   "glm_xml", "cohere_xml", "kimi_k3_xml", "deepseek_v4_1_xml"] = "json"
    any_order: bool = False
    max_whitespace_cnt: Optional[int] = None
    excludes: List[str] = []


class AnyTextFormat(BaseModel):
    """Any text without the ``excludes`` substrings (and, inside a tag, without the tag's end
    strings); at most ``max_chars`` code points and at most ``max_tokens`` tokens that start
    inside the text (counted by the matcher; ``accept_string`` counts none)."""

    type: Literal["any_text"] = "any_text"
    excludes: List[str] = []
    max_tokens: Optional[int] = Field(default=None, ge=0, le=_INT32_MAX)
    max_chars: Optional[int] = Field(default=None, ge=0, le=_INT32_MAX)


class TokenFormat(BaseModel):
    """One token, by id or by its text."""

    type: Literal["token"] = "token"
    token: TokenRef


class ExcludeTokenFormat(BaseModel):
    """One token that is none of ``exclude_tokens``."""

    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: List[TokenRef] = []


class AnyTokensFormat(BaseModel):
    """Any number of tokens (at most ``max_tokens``), none of them in ``exclude_tokens``."""

    type: Literal["any_tokens"] = "any_tokens"
    exclude_tokens: List[TokenRef] = []
    max_tokens: Optional[int] = Field(default=None, ge=0, le=_INT32_MAX)


class GrammarFormat(BaseModel):
    """Text of the EBNF grammar ``grammar``."""

    type: Literal["grammar"] = "grammar"
    grammar: str


class RegexFormat(BaseModel):
    """Text fully matching the regex ``pattern``."""

    type: Literal["regex"] = "regex"
    pattern: str


# ---------------------------------------------------------------- combinators


class SequenceFormat(BaseModel):
    """The ``elements`` one after another."""

    type: Literal["sequence"] = "sequence"
    elements: List["Format"]


class OrFormat(BaseModel):
    """One of the ``elements``."""

    type: Literal["or"] = "or"
    elements: List["Format"]


class TagFormat(BaseModel):
    """``begin``, then ``content``, then ``end`` (one of several end strings when a list).
    ``begin`` / ``end`` may also be a single token."""

    type: Literal["tag"] = "tag"
    begin: Union[str, TokenFormat]
    content: "Format"
    end: Union[str, List[str], TokenFormat]


class TriggeredTagsFormat(BaseModel):
    """Free text; where a trigger first occurs one of the tags whose ``begin`` starts with it
    must follow, then free text again (each tag's ``begin`` starts with exactly one trigger).
    ``at_least_one``: the text starts with a tag; ``stop_after_first``: nothing after the first
    tag; ``excludes``: substrings the free text never contains."""

    type: Literal["triggered_tags"] = "triggered_tags"
    triggers: List[str]
    tags: List[TagFormat]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: List[str] = []


class TokenTriggeredTagsFormat(BaseModel):
    """Like :class:`TriggeredTagsFormat` with trigger *tokens*: tags begin with a token."""

    type: Literal["token_triggered_tags"] = "token_triggered_tags"
    trigger_tokens: List[TokenRef]
    tags: List[TagFormat]
    exclude_tokens: List[TokenRef] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class TagsWithSeparatorFormat(BaseModel):
    """Zero or more tags with ``separator`` between them and nothing else."""

    type: Literal["tags_with_separator"] = "tags_with_separator"
    tags: List[TagFormat]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


class OptionalFormat(BaseModel):
    """``content`` or nothing."""

    type: Literal["optional"] = "optional"
    content: "Format"


class PlusFormat(BaseModel):
    """``content`` one or more times."""

    type: Literal["plus"] = "plus"
    content: "Format"


class StarFormat(BaseModel):
    """``content`` zero or more times."""

    type: Literal["star"] = "star"
    content: "Format"


class RepeatFormat(BaseModel):
    """``content`` from ``min`` to ``max`` times (``max=-1``: no upper bound)."""

    type: Literal["repeat"] = "repeat"
    min: int
    max: int
    content: "Format"


class DispatchFormat(BaseModel):
    """Free text; where a pattern first occurs its format follows (then free text again when
    ``loop``); ``excludes`` never occur in the free text."""

    type: Literal["dispatch"] = "dispatch"
    rules: List[Tuple[str, "Format"]]
    loop: bool = True
    excludes: List[str] = []


class TokenDispatchFormat(BaseModel):
    """Any tokens; a pattern token is followed by its format (then tokens again when
    ``loop``); ``exclude_tokens`` never appear in the free part."""

    type: Literal["token_dispatch"] = "token_dispatch"
    rules: List[Tuple[TokenRef, "Format"]]
    loop: bool = True
    exclude_tokens: List[TokenRef] = []


class QwenXMLParameterFormat(BaseModel):
    """Deprecated: :class:`JSONSchemaFormat` with ``style="qwen_xml"``."""

    type: Literal["qwen_xml_parameter"] = "qwen_xml_parameter"
    json_schema: Union[bool, Dict[str, Any]]


Format = Annotated[
    Union[
        AnyTextFormat, ConstStringFormat, JSONSchemaFormat, GrammarFormat, RegexFormat,
        QwenXMLParameterFormat, OrFormat, SequenceFormat, TagFormat, TriggeredTagsFormat,
        TokenTriggeredTagsFormat, TagsWithSeparatorFormat, OptionalFormat, PlusFormat,
        StarFormat, TokenFormat, ExcludeTokenFormat, AnyTokensFormat, RepeatFormat,
        DispatchFormat, TokenDispatchFormat,
    ],
    Field(discriminator="type"),
]
"""Any structural-tag format (chosen by its ``type``)."""

for _model in (SequenceFormat, OrFormat, TagFormat, TriggeredTagsFormat, TokenTriggeredTagsFormat,
               TagsWithSeparatorFormat, OptionalFormat, PlusFormat, StarFormat, RepeatFormat,
               DispatchFormat, TokenDispatchFormat):
    _model.model_rebuild()
del _model


# ---------------------------------------------------------------- top level


class StructuralTagItem(BaseModel):
    """Deprecated legacy item: ``begin``, a JSON schema (``schema``: JSON text, dict or
    pydantic model class), ``end``."""

    begin: str
    schema_: Union[str, Type[BaseModel], Dict[str, Any]] = Field(alias="schema")
    end: str


class StructuralTag(BaseModel):
    """A whole structural tag: ``{"type": "structural_tag", "format": {...}}`` (the
    ``response_format`` of the OpenAI-style API)."""

    type: Literal["structural_tag"] = "structural_tag"
    format: Format

    @staticmethod
    def from_legacy_structural_tag(tags: List[StructuralTagItem],
                                   triggers: List[str]) -> "StructuralTag":
        """The legacy ``(tags, triggers)`` form as a ``triggered_tags`` structural tag.

        Example::

            >>> st = StructuralTag.from_legacy_structural_tag(
            ...     [StructuralTagItem(begin="<f>", schema={"type": "object"}, end="</f>")], ["<f"])
            >>> st.format.type
            'triggered_tags'
        """
        from .structural.spec import legacy_structural_tag

        return StructuralTag.model_validate(legacy_structural_tag(tags, triggers))

    @staticmethod
    def from_json(json_str: Union[str, Dict[str, Any]]) -> "StructuralTag":
        """A ``StructuralTag`` from its JSON text or dict (pydantic validation).

        Example::

            >>> StructuralTag.from_json('{"format": {"type": "const_string", "value": "x"}}').format.value
            'x'
        """
        if isinstance(json_str, str):
            return StructuralTag.model_validate_json(json_str)
        if isinstance(json_str, dict):
            return StructuralTag.model_validate(json_str)
        raise ValueError("a structural tag must be JSON text or a dict")
