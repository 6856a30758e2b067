"""DeepSeek families. Every one may open with a ``<think>...</think>`` block (the prompt already
ends with ``<think>`` when reasoning is enabled) and groups its calls in one section.

- ``deepseek_r1`` (R1, R1-0528): ``<｜tool▁calls▁begin｜>`` then calls
  ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{...}\\n```<｜tool▁call▁end｜>``
  separated by ``\\n``, then ``<｜tool▁calls▁end｜>``.
- ``deepseek_v3_1`` (V3.1, V3.2-Exp): calls
  ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`` in the same section markers.
- ``deepseek_v3_2`` / ``deepseek_v4``: DSML, ``<｜DSML｜function_calls>`` (V4: ``tool_calls``)
  around ``<｜DSML｜invoke name="NAME">`` blocks with XML parameters (style ``deepseek_xml``).
- ``deepseek_v4_1``: DSML with ``<｜DSML｜ calls>`` / ``<｜DSML｜ invoke ...>`` (style
  ``deepseek_v4_1_xml``); with no tool left a calls block may not appear in the text.
- V4 and V4.1 with ``auto``: at most one calls block in the text (parallel calls go inside it).

Example::

    >>> from xmask.structural.families.deepseek import build_deepseek_v3_1
    >>> from xmask.structural.families.common import CallOptions
    >>> build_deepseek_v3_1([], [], "auto", "disabled", CallOptions())["type"]
    'any_text'
"""

from .common import (THINK_TOKENS, Section, name_of, reasoning_block, reject_builtin_tools,
                     section_calls, tag, with_reasoning)
from .registry import register_builtin

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"


def _assemble(model, tools, builtin_tools, choice, reasoning, options, make_tag, section,
              no_tool_forbidden=()):
    reject_builtin_tools(model, builtin_tools)
    tags = [make_tag(t) for t in tools]
    calls = section_calls(choice, tags, section, THINK_TOKENS, options,
                          no_tool_forbidden=no_tool_forbidden)
    prefix = reasoning_block(reasoning, "<think>", "</think>", THINK_TOKENS, options)
    return with_reasoning(prefix, calls)


# R1 and V3.1 fold the section markers into a forced call's own tag.
_CLASSIC_SECTION = dict(begin=CALLS_BEGIN, end=CALLS_END, trigger=CALLS_BEGIN, forced="merge",
                        required="wrap")


@register_builtin("deepseek_r1")
def build_deepseek_r1(tools, builtin_tools, choice, reasoning, options):
    """DeepSeek-R1: calls with a fenced JSON block."""
    def make_tag(t):
        return tag(f"{CALL_BEGIN}function{SEP}{name_of(t)}\n```json\n", options.arguments(t),
                   f"\n```{CALL_END}")
    return _assemble("deepseek_r1", tools, builtin_tools, choice, reasoning, options, make_tag,
                     Section(separator="\n", **_CLASSIC_SECTION))


@register_builtin("deepseek_v3_1")
def build_deepseek_v3_1(tools, builtin_tools, choice, reasoning, options):
    """DeepSeek-V3.1: bare JSON arguments after the name."""
    def make_tag(t):
        return tag(f"{CALL_BEGIN}{name_of(t)}{SEP}", options.arguments(t), CALL_END)
    return _assemble("deepseek_v3_1", tools, builtin_tools, choice, reasoning, options, make_tag,
                     Section(**_CLASSIC_SECTION))


def _dsml(model, tools, builtin_tools, choice, reasoning, options, *, calls, invoke, style,
          calls_block_excluded=False, one_section=False):
    # The invoke end keeps its "\n", so consecutive invokes need no separator (as the chat
    # template, which joins them with one "\n").
    def make_tag(t):
        return tag(f'<｜DSML｜{invoke} name="{name_of(t)}">\n', options.arguments(t, style),
                   f"</｜DSML｜{invoke}>\n")
    trigger = f"<｜DSML｜{calls}>"
    section = Section(begin=trigger + "\n", end=f"</｜DSML｜{calls}>", trigger=trigger,
                      lead="\n\n", one_section=one_section)
    return _assemble(model, tools, builtin_tools, choice, reasoning, options, make_tag, section,
                     no_tool_forbidden=(trigger,) if calls_block_excluded else ())


@register_builtin("deepseek_v3_2")
def build_deepseek_v3_2(tools, builtin_tools, choice, reasoning, options):
    """DeepSeek-V3.2 DSML ``function_calls``."""
    return _dsml("deepseek_v3_2", tools, builtin_tools, choice, reasoning, options,
                 calls="function_calls", invoke="invoke", style="deepseek_xml")


@register_builtin("deepseek_v4")
def build_deepseek_v4(tools, builtin_tools, choice, reasoning, options):
    """DeepSeek-V4 DSML ``tool_calls``."""
    return _dsml("deepseek_v4", tools, builtin_tools, choice, reasoning, options,
                 calls="tool_calls", invoke="invoke", style="deepseek_xml", one_section=True)


@register_builtin("deepseek_v4_1")
def build_deepseek_v4_1(tools, builtin_tools, choice, reasoning, options):
    """DeepSeek-V4.1 DSML `` calls`` / `` invoke``."""
    return _dsml("deepseek_v4_1", tools, builtin_tools, choice, reasoning, options,
                 calls=" calls", invoke=" invoke", style="deepseek_v4_1_xml",
                 calls_block_excluded=True, one_section=True)
