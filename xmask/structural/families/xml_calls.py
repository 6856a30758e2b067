"""Families whose calls carry XML-style parameters in free text: Qwen3.5 / Qwen3-Coder, MiMo,
GLM-4.7 / GLM-5. Arguments use the ``json_schema`` styles ``qwen_xml`` / ``glm_xml`` (string
values raw, other values JSON).

- ``qwen_3_5`` / ``qwen_3_coder``:
  ``<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>``,
  after an optional ``<think>...</think>\\n\\n``.
- ``mimo`` (MiMo-V2.6): the same without the newlines between wrapper tags; the prompt does not
  open the think block, and stray wrapper markers are kept out of free text.
- ``glm_4_7``: ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>``; the
  argument control tokens never appear in free text or reasoning.

Example::

    >>> from xmask.structural.families.xml_calls import build_glm_4_7
    >>> from xmask.structural.families.common import CallOptions
    >>> build_glm_4_7([], [], "auto", "disabled", CallOptions())["excludes"][:3]
    ['<think>', '</think>', '<tool_call>']
"""

from dataclasses import dataclass
from typing import Optional, Tuple

from .common import (THINK_TOKENS, flat_calls, name_of, reasoning_block, reject_builtin_tools,
                     tag, with_reasoning)
from .registry import register_builtin


@dataclass(frozen=True)
class _XmlFormat:
    begin: str  # "{name}" stands for the tool name
    end: str
    style: str
    trigger: str
    text_excludes: Tuple[str, ...]
    reasoning_excludes: Tuple[str, ...]
    no_tool_excludes: Optional[Tuple[str, ...]] = None
    prompt_opens_block: bool = True
    after_reasoning: str = ""


def _build(model, fmt, tools, builtin_tools, choice, reasoning, options):
    reject_builtin_tools(model, builtin_tools)
    tags = [tag(fmt.begin.format(name=name_of(t)), options.arguments(t, fmt.style), fmt.end)
            for t in tools]
    calls = flat_calls(choice, tags, fmt.trigger, fmt.text_excludes, options,
                       no_tool_excludes=fmt.no_tool_excludes)
    prefix = reasoning_block(reasoning, "<think>", "</think>", fmt.reasoning_excludes, options,
                             prompt_opens_block=fmt.prompt_opens_block, after=fmt.after_reasoning)
    return with_reasoning(prefix, calls)


QWEN_XML = _XmlFormat("<tool_call>\n<function={name}>\n", "\n</function>\n</tool_call>",
                      "qwen_xml", "<tool_call>\n<function=", THINK_TOKENS, THINK_TOKENS,
                      after_reasoning="\n\n")


@register_builtin("qwen_3_5", "qwen_3_coder")
def build_qwen_3_5(tools, builtin_tools, choice, reasoning, options):
    """Qwen3.5 / Qwen3-Coder XML calls."""
    return _build("qwen_3_5", QWEN_XML, tools, builtin_tools, choice, reasoning, options)


_MIMO_TEXT = ("<think>", "</think>", "</tool_call>", "<function=")
# The model writes the whole think block itself (the prompt does not open it).
MIMO_XML = _XmlFormat("<tool_call><function={name}>", "</function></tool_call>", "qwen_xml",
                      "<tool_call>", _MIMO_TEXT, ("<tool_call>",) + _MIMO_TEXT,
                      no_tool_excludes=("<tool_call>",) + _MIMO_TEXT, prompt_opens_block=False)


@register_builtin("mimo")
def build_mimo(tools, builtin_tools, choice, reasoning, options):
    """MiMo-V2.6 compact XML calls."""
    return _build("mimo", MIMO_XML, tools, builtin_tools, choice, reasoning, options)


_GLM_ARGS = ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
# Reasoning holds no call, so every control token is out of it; free text may open a call.
_GLM_REASONING = THINK_TOKENS + ("<tool_call>", "</tool_call>") + _GLM_ARGS
GLM_XML = _XmlFormat("<tool_call>{name}", "</tool_call>", "glm_xml", "<tool_call>",
                     THINK_TOKENS + ("</tool_call>",) + _GLM_ARGS, _GLM_REASONING,
                     no_tool_excludes=_GLM_REASONING)


@register_builtin("glm_4_7")
def build_glm_4_7(tools, builtin_tools, choice, reasoning, options):
    """GLM-4.7 / GLM-5 ``<arg_key>``/``<arg_value>`` calls."""
    return _build("glm_4_7", GLM_XML, tools, builtin_tools, choice, reasoning, options)
