"""Kimi families.

- ``kimi`` (Kimi-K2, K2.5): ``<|tool_calls_section_begin|>`` then calls
  ``<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>``
  then ``<|tool_calls_section_end|>``; the prompt does not open the think block, so an enabled
  block is ``...</think>`` with ``<think>`` still allowed inside it.
- ``kimi_k3`` (Kimi-K3): token-delimited blocks, all back to back::

      [think body]<|close|>think<|sep|>            (reasoning; the prompt opened it)
      <|open|>response<|sep|>TEXT<|close|>response<|sep|>
      <|open|>tools<|sep|><|open|>call tool="NAME" index="N"<|sep|>ARGS<|close|>call<|sep|>...
      <|close|>tools<|sep|>
      <|close|>message<|sep|>

  Arguments use style ``kimi_k3_xml``; with reasoning disabled the prompt opened the response
  block, so the output starts in its body.

Example::

    >>> from xmask.structural.families.kimi import build_kimi_k3
    >>> from xmask.structural.families.common import CallOptions
    >>> build_kimi_k3([], [], "auto", "disabled", CallOptions())["elements"][-1]["value"]
    '<|close|>message<|sep|>'
"""

from .common import (THINK_TOKENS, Section, any_text, const, indexed_call, name_of, optional,
                     reasoning_block, reject_builtin_tools, section_calls, sequence, tag,
                     with_reasoning)
from .registry import register_builtin

K2_CALL_BEGIN = "<|tool_call_begin|>"
K2_SECTION = Section(begin="<|tool_calls_section_begin|>", end="<|tool_calls_section_end|>",
                     trigger="<|tool_calls_section_begin|>")


@register_builtin("kimi")
def build_kimi(tools, builtin_tools, choice, reasoning, options):
    """Kimi-K2 sectioned calls with call indices."""
    reject_builtin_tools("kimi", builtin_tools)
    tags = [indexed_call(f"{K2_CALL_BEGIN}functions.{name_of(t)}:", "<|tool_call_argument_begin|>",
                         options.arguments(t), "<|tool_call_end|>") for t in tools]
    calls = section_calls(choice, tags, K2_SECTION, THINK_TOKENS + (K2_CALL_BEGIN,), options,
                          no_tool_excludes=THINK_TOKENS)
    # K2 does not prefill <think>: in enabled mode the block may itself contain it (XGrammar).
    excludes = THINK_TOKENS if reasoning == "auto" else ()
    return with_reasoning(reasoning_block(reasoning, "<think>", "</think>", excludes, options),
                          calls)


OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"


def _k3_block(name, closing=False):
    return f"{CLOSE if closing else OPEN}{name}{SEP}"


@register_builtin("kimi_k3")
def build_kimi_k3(tools, builtin_tools, choice, reasoning, options):
    """Kimi-K3 think / response / tools / message blocks."""
    reject_builtin_tools("kimi_k3", builtin_tools)
    tags = [indexed_call(f'{OPEN}call tool="{name_of(t)}" index="', f'"{SEP}',
                         options.arguments(t, "kimi_k3_xml", options.excludes((OPEN, CLOSE, SEP))),
                         _k3_block("call", closing=True)) for t in tools]
    tools_begin, tools_end = _k3_block("tools"), _k3_block("tools", closing=True)
    if choice == "forced":
        tools_part = sequence(const(tools_begin), tags[0], const(tools_end))
    elif choice == "required":
        tools_part = sequence(const(tools_begin), options.calls(tags), const(tools_end))
    elif tags:
        tools_part = optional(tag(tools_begin, options.calls(tags), tools_end))
    else:
        tools_part = None
    response = tag("" if reasoning == "disabled" else _k3_block("response"),
                   any_text(options.excludes((OPEN, CLOSE))), _k3_block("response", closing=True))
    elements = [response] + ([tools_part] if tools_part else [])
    elements.append(const(_k3_block("message", closing=True)))
    think = reasoning_block(reasoning, _k3_block("think"), _k3_block("think", closing=True),
                            (OPEN, CLOSE), options)
    return sequence(*([think] if think else []), *elements)
