"""Per-model tool-call structural tags, token by token on each family's real tokenizer
(Llama-3, Qwen2.5, DeepSeek-V3, o200k): a realistic assistant message with two tool calls (and
a reasoning block where the family has one) is accepted and may end; malformed calls (unknown
tool, wrong argument type, bad enum value, missing required argument, unclosed call) are
rejected; tool_choice none / required / named and parallel_tool_calls=False behave; masks equal
the slow reference along a message.

Messages are tokenized as the model emits them: markers that are *special* tokens of the
vocabulary (o200k's ``<|channel|>``, ``<|message|>``, ``<|constrain|>``, ``<|start|>``) are their
special ids, which the formats' literal markers accept (a literal spelling a special token's
text may be that token, README).  Stop tokens are the exception: a literal never matches one
(o200k's ``<|end|>`` and ``<|call|>`` are stop tokens of its TokenizerInfo), so those markers
are spelled with ordinary tokens.  The Qwen / DeepSeek markers are ordinary added tokens.
"""

import functools
import json

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json
from maskutil import GreedyTokens, diff_ids
from model_messages import (FAMILIES, GOOD_CALLS, MALFORMED_CALLS, NO_REASONING, TOOLS, message,
                            plain_text, unclosed)

import xmask

pytest.importorskip("pydantic")


class Tok:
    def __init__(self, name):
        path = str(tokenizer_json(name))
        self.info = xmask.TokenizerInfo.from_huggingface(path)
        self.tokenizer = tokenizers.Tokenizer.from_file(path)
        self.compiler = xmask.GrammarCompiler(self.info)
        self.stop = set(self.info.stop_token_ids)
        self.greedy = GreedyTokens(self.info, name)

    def encode(self, text):
        out = []
        for t in self.tokenizer.encode(text, add_special_tokens=False).ids:
            if t in self.stop:
                out.extend(self.greedy.ids(self.tokenizer.id_to_token(t).encode()))
            else:
                out.append(t)
        return out


@functools.lru_cache(maxsize=None)
def tok(name):
    return Tok(name)


@functools.lru_cache(maxsize=None)
def compiled(model, choice="auto", reasoning="enabled", parallel=True, extra=()):
    """``choice`` "@name" forces that function, "#type" that builtin tool; ``extra``: more
    (key, value) options of get_model_structural_tag (``tools``: JSON text of other tools)."""
    t = tok(FAMILIES[model][0])
    options = dict(extra)
    tools = json.loads(options.pop("tools")) if "tools" in options else TOOLS
    choice_arg = {"type": "function", "function": {"name": choice[1:]}} if choice[0] == "@" \
        else {"type": choice[1:]} if choice[0] == "#" else choice
    stag = xmask.get_model_structural_tag(model, tools, choice_arg, reasoning,
                                          parallel_tool_calls=parallel, **options)
    return t.compiler.compile_structural_tag(stag)


def outcome(model, text, choice="auto", reasoning="enabled", parallel=True, extra=()):
    """'ok' when every token is accepted and the output may end there, else where it failed."""
    t = tok(FAMILIES[model][0])
    matcher = xmask.GrammarMatcher(compiled(model, choice, reasoning, parallel, extra))
    ids = t.encode(text)
    for i, token in enumerate(ids):
        if not matcher.accept_token(token):
            return f"rejected token {i} {t.tokenizer.decode(ids[i:i + 1])!r}"
    if not matcher.accept_token(t.info.stop_token_ids[0]):
        return "cannot end"
    return "ok" if matcher.is_terminated() else "not terminated"


def modes(model):
    return ["disabled"] if model in NO_REASONING else ["enabled", "disabled", "auto"]


CASES = [(m, r) for m in FAMILIES for r in modes(m)]
MAIN_MODE = {m: modes(m)[0] for m in FAMILIES}
# Text before a required / forced section (MiniMax writes a newline before it).
LEAD = {"minimax": "\n"}


@pytest.mark.parametrize("model, reasoning", CASES)
def test_realistic_message_is_accepted(model, reasoning):
    assert outcome(model, message(model, reasoning), reasoning=reasoning) == "ok"


@pytest.mark.parametrize("mutation", sorted(MALFORMED_CALLS))
@pytest.mark.parametrize("model", list(FAMILIES))
def test_malformed_call_is_rejected(model, mutation):
    reasoning = MAIN_MODE[model]
    text = message(model, reasoning, MALFORMED_CALLS[mutation])
    assert outcome(model, text, reasoning=reasoning).startswith("rejected"), mutation


@pytest.mark.parametrize("model", list(FAMILIES))
def test_unclosed_call_cannot_end(model):
    reasoning = MAIN_MODE[model]
    assert outcome(model, unclosed(model, reasoning), reasoning=reasoning) != "ok"


@pytest.mark.parametrize("model", list(FAMILIES))
def test_required_rejects_plain_text_and_accepts_calls(model):
    reasoning = MAIN_MODE[model]
    assert outcome(model, plain_text(model, reasoning), "required", reasoning) != "ok"
    calls = message(model, reasoning, text=LEAD.get(model, ""))
    assert outcome(model, calls, "required", reasoning) == "ok"


@pytest.mark.parametrize("model", list(FAMILIES))
def test_named_tool_choice_forces_that_call(model):
    reasoning = MAIN_MODE[model]
    lead = LEAD.get(model, "")
    assert outcome(model, message(model, reasoning, [GOOD_CALLS[1]], lead), "@get_time",
                   reasoning) == "ok"
    assert outcome(model, message(model, reasoning, [GOOD_CALLS[0]], lead), "@get_time",
                   reasoning) != "ok"
    assert outcome(model, plain_text(model, reasoning), "@get_time", reasoning) != "ok"


@pytest.mark.parametrize("choice", ["required", "@get_time"])
def test_harmony_required_needs_a_call(choice):
    # Deliberately exact: XGrammar 0.2.8 accepts these two (its stream has at_least_one=False).
    assert outcome("harmony", "", choice, "enabled") != "ok"
    analysis_only = message("harmony", "enabled", calls=[])[:-len("<|start|>assistant")]
    assert outcome("harmony", analysis_only, choice, "enabled") != "ok"


@pytest.mark.parametrize("model", list(FAMILIES))
def test_none_allows_plain_text_only(model):
    reasoning = MAIN_MODE[model]
    assert outcome(model, plain_text(model, reasoning), "none", reasoning) == "ok"
    assert outcome(model, plain_text(model, reasoning), "auto", reasoning) == "ok"


@pytest.mark.parametrize("model", list(FAMILIES))
def test_single_call_when_parallel_calls_are_off(model):
    reasoning = MAIN_MODE[model]
    one = message(model, reasoning, [GOOD_CALLS[0]])
    assert outcome(model, one, reasoning=reasoning, parallel=False) == "ok"
    assert outcome(model, message(model, reasoning), reasoning=reasoning, parallel=False) != "ok"


SEARCH = {"type": "web_search_preview", "name": "browser.search", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}


@pytest.mark.parametrize("choice", ["auto", "#web_search_preview"])
def test_harmony_builtin_tool(choice):
    tools = (("tools", json.dumps([TOOLS[0], SEARCH])),)
    search = ('<|channel|>analysis<|message|>Search it.<|end|><|start|>assistant'
              '<|channel|>commentary to=browser.search code<|message|>{"query": "Paris weather"}'
              "<|call|>")
    assert outcome("harmony", search, choice, extra=tools) == "ok"
    assert outcome("harmony", search.replace("Paris weather", "x\"}{"), choice,
                   extra=tools) != "ok"
    weather = message("harmony", "enabled", [GOOD_CALLS[0]])
    result = outcome("harmony", weather, choice, extra=tools)
    assert result == "ok" if choice == "auto" else result.startswith("rejected")


def test_any_order_accepts_arguments_in_any_order():
    swapped = [("get_weather", [("unit", "celsius"), ("city", "Paris")])]
    text = message("qwen_3", "disabled", swapped)
    assert outcome("qwen_3", text, reasoning="disabled") != "ok"
    assert outcome("qwen_3", text, reasoning="disabled", extra=(("any_order", True),)) == "ok"


def test_exclude_special_tokens_keeps_think_markers_out_of_text():
    text = plain_text("qwen_3", "disabled", "No <think> here.")
    assert outcome("qwen_3", text, reasoning="disabled").startswith("rejected")
    assert outcome("qwen_3", text, reasoning="disabled",
                   extra=(("exclude_special_tokens", False),)) == "ok"


@pytest.mark.parametrize("model", list(FAMILIES))
def test_masks_equal_the_reference_along_a_message(model):
    reasoning = MAIN_MODE[model]
    t = tok(FAMILIES[model][0])
    ids = t.encode(message(model, reasoning))
    matcher = xmask.GrammarMatcher(compiled(model, "auto", reasoning))
    n_words = (t.info.vocab_size + 31) // 32
    checkpoints = set(np.linspace(0, len(ids), 8).astype(int).tolist())
    for i, token in enumerate(ids + [None]):
        if i in checkpoints:
            fast = np.zeros((1, n_words), dtype=np.int32)
            ref = np.zeros((1, n_words), dtype=np.int32)
            matcher.fill_next_token_bitmask(fast)
            matcher._reference_fill_next_token_bitmask(ref)
            assert diff_ids(fast, ref) == [], (model, i)
        if token is not None:
            assert matcher.accept_token(token)
