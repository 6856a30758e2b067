"""MiniMax families.

- ``minimax`` (M2.5, M2.7): ``<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter ...>
  </invoke>\\n...</minimax:tool_call>`` (style ``minimax_xml``) after a think block; with
  reasoning disabled the output starts with the empty block's remainder ``\\n</think>\\n\\n``
  and then ``\\n\\n`` (as XGrammar 0.2.8 spells it).
- ``minimax_m3`` (M3): every marker is prefixed by the namespace ``]<]minimax[>[``; arguments
  are namespace-prefixed XML (style ``minimax_m3_xml``); think markers ``<mm:think>`` /
  ``</mm:think>``; in ``auto`` reasoning a lone ``</mm:think>`` may stand for a skipped block.
  A required call may follow free text.

Example::

    >>> from xmask.structural.families.minimax import build_minimax
    >>> from xmask.structural.families.common import CallOptions
    >>> build_minimax([], [], "auto", "disabled", CallOptions())["elements"][0]["value"]
    '\\n</think>\\n\\n'
"""

from .common import (THINK_TOKENS, Section, const, name_of, one_of, reasoning_block,
                     reject_builtin_tools, section_calls, sequence, tag, with_reasoning)
from .registry import register_builtin

M2_SECTION = Section(begin="<minimax:tool_call>\n", end="</minimax:tool_call>",
                     trigger="<minimax:tool_call>", lead="\n")


@register_builtin("minimax")
def build_minimax(tools, builtin_tools, choice, reasoning, options):
    """MiniMax-M2.5 invoke blocks."""
    reject_builtin_tools("minimax", builtin_tools)
    tags = [tag(f'<invoke name="{name_of(t)}">\n', options.arguments(t, "minimax_xml"),
                "</invoke>\n") for t in tools]
    calls = section_calls(choice, tags, M2_SECTION, THINK_TOKENS, options)
    if reasoning == "disabled":
        return sequence(const("\n</think>\n\n"), const("\n\n"), calls)
    excludes = () if reasoning == "enabled" else THINK_TOKENS
    return with_reasoning(reasoning_block(reasoning, "<think>", "</think>", excludes, options,
                                          after="\n\n"), calls)


NS = "]<]minimax[>["
M3_THINK = ("<mm:think>", "</mm:think>")
M3_SECTION = Section(begin=NS + "<tool_call>\n", end=NS + "</tool_call>",
                     trigger=NS + "<tool_call>", forced="wrap", required="triggered")
# The bare namespace stays allowed: every M3 element and the trigger start with it.
M3_TEXT_EXCLUDES = M3_THINK + (M3_SECTION.end, NS + "<invoke", NS + "</invoke>")
M3_REASONING_EXCLUDES = (M3_SECTION.trigger,) + M3_TEXT_EXCLUDES


@register_builtin("minimax_m3")
def build_minimax_m3(tools, builtin_tools, choice, reasoning, options):
    """MiniMax-M3 namespaced invoke blocks."""
    reject_builtin_tools("minimax_m3", builtin_tools)
    tags = [tag(f'{NS}<invoke name="{name_of(t)}">', options.arguments(t, "minimax_m3_xml"),
                NS + "</invoke>\n") for t in tools]
    calls = section_calls(choice, tags, M3_SECTION, M3_TEXT_EXCLUDES, options,
                          no_tool_excludes=M3_REASONING_EXCLUDES)
    prefix = reasoning_block(reasoning, *M3_THINK, M3_REASONING_EXCLUDES, options)
    if reasoning == "auto":
        # The adaptive template writes a lone closing marker when it skips reasoning.
        prefix["content"] = one_of(prefix["content"], const(M3_THINK[1]))
    return with_reasoning(prefix, calls)
