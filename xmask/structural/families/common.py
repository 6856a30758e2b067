"""Shared pieces of the per-model tool-call formats: structural-tag format constructors (plain
JSON dicts in XGrammar's form), the options every family takes, the leading reasoning block and
the two tool-call layouts most families share.

Layouts (``choice`` from ``normalize_tool_choice``):

- *flat* (``flat_calls``): each call is its own tag, opened by a trigger found in free text
  (Llama ``{"name": ``, Qwen ``<tool_call>``). auto: free text with any number of calls;
  required: the same with at least one call; forced: exactly the one call.
- *section* (``section_calls``): the calls sit inside one section marker pair (DeepSeek
  ``<｜tool▁calls▁begin｜>``, Kimi ``<|tool_calls_section_begin|>``). auto: free text, then
  optionally the section (triggered by its begin marker); required / forced: the section itself.

Example::

    >>> from xmask.structural.families.common import CallOptions, tag, const
    >>> tag("<a>", const("x"), "</a>")["end"]
    '</a>'
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence

from ...errors import InvalidStructuralTagError
from ..tool_params import tool_arguments_schema, tool_output_name

THINK_TOKENS = ("<think>", "</think>")


# ---- format constructors (XGrammar's JSON form) ----

def const(value: str) -> dict:
    """A literal string."""
    return {"type": "const_string", "value": value}


def regex(pattern: str) -> dict:
    """Text matching a regular expression."""
    return {"type": "regex", "pattern": pattern}


def any_text(excludes: Sequence[str] = ()) -> dict:
    """Any text in which none of ``excludes`` occurs."""
    return {"type": "any_text", "excludes": list(excludes)}


def sequence(*elements: dict) -> dict:
    """The elements one after the other."""
    return {"type": "sequence", "elements": list(elements)}


def one_of(*elements: dict) -> dict:
    """Exactly one of the elements."""
    return {"type": "or", "elements": list(elements)}


def optional(content: dict) -> dict:
    """The content or nothing."""
    return {"type": "optional", "content": content}


def tag(begin: str, content: dict, end) -> dict:
    """``begin``, the content, then ``end`` (a string, or a list of alternative strings)."""
    return {"type": "tag", "begin": begin, "content": content,
            "end": list(end) if isinstance(end, (list, tuple)) else end}


def triggered_tags(triggers: Sequence[str], tags: List[dict], excludes: Sequence[str] = (),
                   at_least_one: bool = False, stop_after_first: bool = False) -> dict:
    """Free text in which each trigger opens one of the tags (whose begin starts with it)."""
    return {"type": "triggered_tags", "triggers": list(triggers), "tags": tags,
            "at_least_one": at_least_one, "stop_after_first": stop_after_first,
            "excludes": list(excludes)}


def tags_with_separator(tags: List[dict], separator: str, at_least_one: bool = False,
                        stop_after_first: bool = False) -> dict:
    """Tags one after another, ``separator`` between two of them, no other text."""
    return {"type": "tags_with_separator", "tags": tags, "separator": separator,
            "at_least_one": at_least_one, "stop_after_first": stop_after_first}


# ---- options shared by every family ----

@dataclass(frozen=True)
class CallOptions:
    """The keyword options of ``get_model_structural_tag`` that every builder honours."""

    any_order: bool = False
    exclude_special_tokens: bool = True
    max_whitespace_cnt: Optional[int] = None
    parallel_tool_calls: bool = True

    @property
    def single_call(self) -> bool:
        """At most one call (``parallel_tool_calls=False``)."""
        return not self.parallel_tool_calls

    def excludes(self, tokens: Sequence[str]) -> List[str]:
        """``tokens`` when special tokens are kept out of free text, else nothing."""
        return list(tokens) if self.exclude_special_tokens else []

    def arguments(self, tool, style: str = "json", excludes: Sequence[str] = ()) -> dict:
        """The tool's arguments as a ``json_schema`` format of the given style."""
        fmt = {"type": "json_schema", "json_schema": tool_arguments_schema(tool), "style": style,
               "any_order": self.any_order, "max_whitespace_cnt": self.max_whitespace_cnt}
        if excludes:
            fmt["excludes"] = list(excludes)
        return fmt

    def calls(self, tags: List[dict], separator: str = "") -> dict:
        """One or more call tags (just one when ``parallel_tool_calls`` is off)."""
        return tags_with_separator(tags, separator, at_least_one=True,
                                   stop_after_first=self.single_call)


def name_of(tool) -> str:
    """The name a model writes for a function or builtin tool."""
    return tool_output_name(tool)


def indexed_call(begin: str, after_index: str, arguments: dict, end) -> dict:
    """A call tag whose begin is followed by a decimal call index, then ``after_index``, then
    the arguments (Kimi, Cohere)."""
    return tag(begin, sequence(regex(r"\d+"), const(after_index), arguments), end)


def reject_builtin_tools(model: str, builtin_tools) -> None:
    """Raise for builtin tools in a family whose format has no place for them (XGrammar drops
    them silently for most families; a tool the caller offered must not vanish)."""
    if builtin_tools:
        raise InvalidStructuralTagError(
            f"model format {model!r} does not support builtin tools (got type "
            f"{builtin_tools[0].type!r}); only 'harmony' does", "tools")


# ---- reasoning ----

def reasoning_block(mode: str, begin: str, end: str, excludes: Sequence[str],
                    options: CallOptions, *, prompt_opens_block: bool = True,
                    after: str = "") -> Optional[dict]:
    """The leading reasoning block, or ``None`` when ``mode`` is ``"disabled"``.

    ``"enabled"``: the block is required; when ``prompt_opens_block`` the generation prompt
    already ends with ``begin``, so the output starts inside the block. ``"auto"``: a complete
    block (with ``begin``) or none. ``after`` is text that follows the block's end.
    """
    if mode == "disabled":
        return None
    opener = "" if mode == "enabled" and prompt_opens_block else begin
    block = tag(opener, any_text(options.excludes(excludes)), end)
    if after:
        block = sequence(block, const(after))
    return optional(block) if mode == "auto" else block


def with_reasoning(prefix: Optional[dict], suffix: dict) -> dict:
    """The reasoning block (if any) followed by the rest."""
    return suffix if prefix is None else sequence(prefix, suffix)


# ---- the two shared layouts ----

def flat_calls(choice: str, tags: List[dict], trigger: str, text_excludes: Sequence[str],
               options: CallOptions, no_tool_excludes: Optional[Sequence[str]] = None) -> dict:
    """The *flat* layout (see the module docstring). ``no_tool_excludes``: what free text
    excludes when no tool is left (default ``text_excludes``)."""
    if choice == "forced":
        return tags[0]
    if not tags:
        return any_text(options.excludes(
            text_excludes if no_tool_excludes is None else no_tool_excludes))
    return triggered_tags([trigger], tags, options.excludes(text_excludes),
                          at_least_one=choice == "required",
                          stop_after_first=options.single_call)


@dataclass(frozen=True)
class Section:
    """The marker pair around a group of calls and how XGrammar spells each choice with it.

    ``trigger`` starts the section in free text (``begin`` or a prefix of it); ``separator``
    goes between two calls; ``lead`` is text before the section when a call is required or
    forced. ``forced``: ``"sequence"`` (markers as constants around the call), ``"merge"``
    (markers folded into the call tag's own begin/end) or ``"wrap"`` (a tag around the call).
    ``required``: ``"sequence"``, ``"wrap"``, or ``"triggered"`` (free text first, as auto,
    with at least one section). ``one_section``: in free text (auto) at most one section,
    even with parallel calls (XGrammar 0.2.9's DeepSeek-V4 spellings).
    """

    begin: str
    end: str
    trigger: str
    separator: str = ""
    lead: str = ""
    forced: str = "sequence"
    required: str = "sequence"
    one_section: bool = False


def section_calls(choice: str, tags: List[dict], section: Section, text_excludes: Sequence[str],
                  options: CallOptions, no_tool_excludes: Optional[Sequence[str]] = None,
                  no_tool_forbidden: Sequence[str] = ()) -> dict:
    """The *section* layout (see the module docstring). ``no_tool_forbidden``: text kept out
    of free text when no tool is left, whatever ``exclude_special_tokens`` says."""
    if choice == "forced":
        call = tags[0]
        if section.forced == "merge":
            return tag(section.begin + call["begin"], call["content"], call["end"] + section.end)
        if section.forced == "wrap":
            return tag(section.lead + section.begin, call, section.end)
        return sequence(const(section.lead + section.begin), call, const(section.end))
    if not tags:
        return any_text(options.excludes(
            text_excludes if no_tool_excludes is None else no_tool_excludes)
            + list(no_tool_forbidden))
    calls = options.calls(tags, section.separator)
    if choice == "required" and section.required == "sequence":
        return sequence(const(section.lead + section.begin), calls, const(section.end))
    if choice == "required" and section.required == "wrap":
        return tag(section.lead + section.begin, calls, section.end)
    return triggered_tags([section.trigger], [tag(section.begin, calls, section.end)],
                          options.excludes(text_excludes), at_least_one=choice == "required",
                          stop_after_first=options.single_call or section.one_section)
