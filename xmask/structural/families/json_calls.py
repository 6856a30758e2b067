"""Families whose calls are JSON objects in free text: Llama 3.x, Qwen3, EXAONE 4.0.

- ``llama`` (Llama-3, 3.1, 3.2): ``{"name": "NAME", "parameters": {...}}`` anywhere in the text;
  no reasoning block (``reasoning`` is ignored).
- ``qwen_3`` (Qwen3, Qwen3-Next):
  ``<tool_call>\\n{"name": "NAME", "arguments": {...}}\\n</tool_call>``
  after an optional ``<think>...</think>\\n\\n`` block.
- ``exaone`` (EXAONE-4.0): ``<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>``, same
  reasoning block.

Example::

    >>> from xmask.structural.families.json_calls import build_qwen_3
    >>> from xmask.structural.families.common import CallOptions
    >>> build_qwen_3([], [], "auto", "disabled", CallOptions())
    {'type': 'any_text', 'excludes': ['<think>', '</think>']}
"""

from .common import (THINK_TOKENS, flat_calls, name_of, reasoning_block, reject_builtin_tools,
                     tag, with_reasoning)
from .registry import register_builtin


def _json_object_calls(model, tools, builtin_tools, choice, options, *, head, field, tail, trigger):
    # Every family here writes '{"name": "NAME", "<field>": ARGS' then closes the object.
    reject_builtin_tools(model, builtin_tools)
    tags = [tag(f'{head}{{"name": "{name_of(t)}", "{field}": ', options.arguments(t), tail)
            for t in tools]
    return flat_calls(choice, tags, trigger, THINK_TOKENS, options)


def _think_block(reasoning, options, *, prompt_excludes):
    return reasoning_block(reasoning, "<think>", "</think>", prompt_excludes, options,
                           after="\n\n")


@register_builtin("llama")
def build_llama(tools, builtin_tools, choice, reasoning, options):
    """Llama 3.x: JSON call objects triggered by ``{"name": ``."""
    return _json_object_calls("llama", tools, builtin_tools, choice, options, head="",
                              field="parameters", tail="}", trigger='{"name": ')


@register_builtin("qwen_3")
def build_qwen_3(tools, builtin_tools, choice, reasoning, options):
    """Qwen3: ``<tool_call>`` JSON calls after an optional think block."""
    calls = _json_object_calls("qwen_3", tools, builtin_tools, choice, options,
                               head="<tool_call>\n", field="arguments", tail="}\n</tool_call>",
                               trigger="<tool_call>")
    return with_reasoning(_think_block(reasoning, options, prompt_excludes=THINK_TOKENS), calls)


@register_builtin("exaone")
def build_exaone(tools, builtin_tools, choice, reasoning, options):
    """EXAONE 4.0: ``<tool_call>`` JSON calls without newlines."""
    calls = _json_object_calls("exaone", tools, builtin_tools, choice, options,
                               head="<tool_call>", field="arguments", tail="}</tool_call>",
                               trigger="<tool_call>")
    # XGrammar keeps <think>/</think> allowed inside an enabled block (the prompt opened it).
    excludes = () if reasoning == "enabled" else THINK_TOKENS
    return with_reasoning(_think_block(reasoning, options, prompt_excludes=excludes), calls)
