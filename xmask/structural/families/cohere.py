"""Cohere Command (``cohere``): ``<|START_THINKING|>...<|END_THINKING|>`` then
``<cofl:tool_calls><cofl:tool_call id="N" name="NAME">ARGS</cofl:tool_call>...</cofl:tool_calls>``
with XML arguments (style ``cohere_xml``).

Example::

    >>> from xmask.structural.families.cohere import build_cohere
    >>> from xmask.structural.families.common import CallOptions
    >>> build_cohere([], [], "auto", "disabled", CallOptions())["excludes"]
    ['<|START_THINKING|>', '<|END_THINKING|>']
"""

from .common import (Section, indexed_call, name_of, reasoning_block, reject_builtin_tools,
                     section_calls, with_reasoning)
from .registry import register_builtin

THINK = ("<|START_THINKING|>", "<|END_THINKING|>")
SECTION = Section(begin="<cofl:tool_calls>", end="</cofl:tool_calls>", trigger="<cofl:tool_calls>")


@register_builtin("cohere")
def build_cohere(tools, builtin_tools, choice, reasoning, options):
    """Cohere XML tool calls with call ids."""
    reject_builtin_tools("cohere", builtin_tools)
    tags = [indexed_call('<cofl:tool_call id="', f'" name="{name_of(t)}">',
                         options.arguments(t, "cohere_xml"), "</cofl:tool_call>") for t in tools]
    calls = section_calls(choice, tags, SECTION, THINK, options)
    excludes = () if reasoning == "enabled" else THINK
    return with_reasoning(reasoning_block(reasoning, *THINK, excludes, options), calls)
