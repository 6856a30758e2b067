"""OpenAI Harmony (gpt-oss, ``harmony``): the output is a stream of messages joined by
``<|start|>assistant``:

- analysis (reasoning, unless disabled): ``<|channel|>analysis<|message|>TEXT<|end|>``
- final answer (``auto`` only): ``<|channel|>final<|message|>TEXT<|end|>`` (or ``<|return|>``)
- function call, in any of the three spellings gpt-oss writes:
  ``<|channel|>commentary to=functions.NAME<|constrain|>json<|message|>{...}<|call|>``,
  `` to=functions.NAME<|channel|>commentary <|constrain|>json<|message|>{...}<|call|>``,
  `` to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>``
- builtin tool call (``name`` defaults to the builtin ``type``):
  ``<|channel|>commentary to=NAME code<|message|>{...}<|call|>`` or
  `` to=NAME<|channel|>commentary code<|message|>{...}<|call|>``

Deliberately exact where XGrammar 0.2.8 is loose: for ``required`` and a forced tool XGrammar
accepts a stream with no call at all (even an empty one); here the stream holds at least one
call. Other messages may come before and, with parallel calls, between and after calls; with
``parallel_tool_calls=False`` the single call ends the stream (as XGrammar).

Example::

    >>> from xmask.structural.families.harmony import build_harmony
    >>> from xmask.structural.families.common import CallOptions
    >>> build_harmony([], [], "auto", "disabled", CallOptions())["separator"]
    '<|start|>assistant'
"""

from .common import (any_text, const, name_of, one_of, optional, sequence, tag,
                     tags_with_separator)
from .registry import register_builtin

CALL_END = "<|call|>"
MESSAGE_END = ("<|end|>", "<|return|>")
SEPARATOR = "<|start|>assistant"

FUNCTION_BEGINS = ("<|channel|>commentary to=functions.{name}<|constrain|>json<|message|>",
                   " to=functions.{name}<|channel|>commentary <|constrain|>json<|message|>",
                   " to=functions.{name}<|channel|>commentary json<|message|>")
BUILTIN_BEGINS = ("<|channel|>commentary to={name} code<|message|>",
                  " to={name}<|channel|>commentary code<|message|>")


def _call_tags(tool, begins, options):
    arguments = options.arguments(tool)
    return [tag(begin.format(name=name_of(tool)), arguments, CALL_END) for begin in begins]


def _messages(tags, at_least_one=False):
    return tags_with_separator(tags, SEPARATOR, at_least_one=at_least_one)


def _then(first, second):
    # first, the separator, second
    return sequence(first, const(SEPARATOR), second)


@register_builtin("harmony")
def build_harmony(tools, builtin_tools, choice, reasoning, options):
    """Harmony message stream with function, builtin, analysis and final messages."""
    function_calls = [c for t in tools for c in _call_tags(t, FUNCTION_BEGINS, options)]
    builtin_calls = [c for t in builtin_tools for c in _call_tags(t, BUILTIN_BEGINS, options)]
    if choice == "forced":
        calls = builtin_calls or function_calls  # the one tool left
    elif choice == "required":
        calls = builtin_calls + function_calls
    else:
        calls = function_calls + builtin_calls
    others = []
    if choice == "auto":
        others.append(tag("<|channel|>final<|message|>", any_text(), MESSAGE_END))
    if reasoning != "disabled":
        others.append(tag("<|channel|>analysis<|message|>", any_text(), MESSAGE_END))
    if choice == "auto" and options.parallel_tool_calls or not calls:
        return _messages(calls + others)
    one_call = tags_with_separator(calls, SEPARATOR, at_least_one=True, stop_after_first=True)
    if choice == "auto":
        # Any number of other messages, then at most one call, which ends the stream.
        if not others:
            return optional(one_call)
        return one_of(_messages(others), one_call, _then(_messages(others, True), one_call))
    call = calls[0] if len(calls) == 1 else one_of(*calls)
    if options.single_call:
        return one_call if not others else one_of(one_call,
                                                  _then(_messages(others, True), one_call))
    # At least one call, any messages before it, any messages or calls after it.
    before = optional(sequence(_messages(others, True), const(SEPARATOR))) if others else None
    after = optional(sequence(const(SEPARATOR), _messages(calls + others, True)))
    return sequence(*([before] if before else []), call, after)
