"""normalize_tool_choice and the argument checks of get_model_structural_tag_format: every
OpenAI tool_choice shape, and a clear InvalidStructuralTagError naming the field for bad input.
Pure Python (no pydantic, no tokenizer)."""

import pytest

import xmask
from xmask.builtin_structural_tag import (builtin_model_names, get_model_structural_tag_format,
                                          normalize_tool_choice)
from xmask.structural.tool_params import BuiltinToolParam, FunctionToolParam, tool_arguments_schema

F = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
G = {"type": "function", "function": {"name": "g"}}
SEARCH = {"type": "web_search_preview", "name": "browser.search",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}


def names(result):
    functions, builtins, choice = result
    return [t.function.name for t in functions], [t.type for t in builtins], choice


@pytest.mark.parametrize("choice, expected", [
    (None, (["f", "g"], ["web_search_preview"], "auto")),
    ("auto", (["f", "g"], ["web_search_preview"], "auto")),
    ("none", ([], [], "auto")),
    ("required", (["f", "g"], ["web_search_preview"], "required")),
    ({"type": "function", "function": {"name": "g"}}, (["g"], [], "forced")),
    ({"type": "web_search_preview"}, ([], ["web_search_preview"], "forced")),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": "g"}}, {"type": "web_search_preview"}]}},
     (["g"], ["web_search_preview"], "required")),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}, ([], [], "auto")),
])
def test_every_tool_choice_shape(choice, expected):
    assert names(normalize_tool_choice([F, G, SEARCH], choice)) == expected


def test_records_read_like_xgrammars_models():
    functions, builtins, _ = normalize_tool_choice([F, G, SEARCH])
    assert isinstance(functions[0], FunctionToolParam) and functions[0].type == "function"
    assert functions[0].function.parameters == {"type": "object"}
    assert functions[1].function.parameters is None
    assert isinstance(builtins[0], BuiltinToolParam) and builtins[0].output_name == "browser.search"
    assert functions[0].model_dump()["function"]["name"] == "f"
    # Absent parameters and strict=False leave the arguments unconstrained, as XGrammar.
    assert tool_arguments_schema(functions[1]) is True
    lax = normalize_tool_choice([{"type": "function", "function": {
        "name": "h", "strict": False, "parameters": {"type": "object"}}}])[0][0]
    assert tool_arguments_schema(lax) is True
    # Already-normalized records (and pydantic-like objects) are accepted as they are.
    assert names(normalize_tool_choice(functions, "required")) == (["f", "g"], [], "required")


@pytest.mark.parametrize("tools, choice, path", [
    ("f", "auto", "tools"),
    ([3], "auto", "tools[0]"),
    ([{"type": "function", "name": "f"}], "auto", "tools[0].function"),
    ([{"type": "function", "function": {"parameters": {}}}], "auto", "tools[0].function.name"),
    ([{"type": "function", "function": {"name": ""}}], "auto", "tools[0].function.name"),
    ([{"function": {"name": "f", "parameters": "{}"}}], "auto", "tools[0].function.parameters"),
    ([{"function": {"name": "f", "strict": "yes"}}], "auto", "tools[0].function.strict"),
    ([F, G, F], "auto", "tools[2].function.name"),
    ([{"type": ""}], "auto", "tools[0].type"),
    ([{"type": "web_search", "parameters": []}], "auto", "tools[0].parameters"),
    ([F], "sometimes", "tool_choice"),
    ([F], 7, "tool_choice"),
    ([F], {"type": "function", "name": "f"}, "tool_choice.function"),
    ([F], {"type": "function", "function": {"name": "nope"}}, "tool_choice.function.name"),
    ([F], {"type": "web_search"}, "tool_choice.type"),
    ([F], {"name": "f"}, "tool_choice.type"),
    ([F], {"type": "allowed_tools"}, "tool_choice.allowed_tools"),
    ([F], {"type": "allowed_tools", "allowed_tools": {"mode": "all", "tools": []}},
     "tool_choice.allowed_tools.mode"),
    ([F], {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": "f"}},
     "tool_choice.allowed_tools.tools"),
    ([F], {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
        {"type": "function", "function": {"name": "x"}}]}},
     "tool_choice.allowed_tools.tools[0].function.name"),
    ([F], {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
        {"type": "web_search"}]}}, "tool_choice.allowed_tools.tools[0].type"),
    ([], "required", "tool_choice"),
    ([F], {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": []}},
     "tool_choice"),
])
def test_bad_tools_and_choices_name_the_field(tools, choice, path):
    with pytest.raises(xmask.InvalidStructuralTagError) as err:
        normalize_tool_choice(tools, choice)
    assert err.value.path == path
    assert isinstance(err.value, ValueError)  # as XGrammar's errors here
    assert path in str(err.value)


@pytest.mark.parametrize("kwargs, path", [
    (dict(model="gpt-9"), "model"),
    (dict(model=None), "model"),
    (dict(model="llama", reasoning="maybe"), "reasoning"),
    (dict(model="llama", parallel_tool_calls="yes"), "parallel_tool_calls"),
    (dict(model="llama", any_order=1), "any_order"),
    (dict(model="llama", exclude_special_tokens=None), "exclude_special_tokens"),
    (dict(model="llama", max_whitespace_cnt=0), "max_whitespace_cnt"),
    (dict(model="llama", max_whitespace_cnt=True), "max_whitespace_cnt"),
    (dict(model="qwen_3", tools=[SEARCH]), "tools"),
])
def test_bad_arguments_name_the_field(kwargs, path):
    with pytest.raises(xmask.InvalidStructuralTagError) as err:
        get_model_structural_tag_format(**kwargs)
    assert err.value.path == path


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(xmask.InvalidStructuralTagError, match="qwen_3_coder"):
        get_model_structural_tag_format("qwen4")


def test_every_xgrammar_family_is_registered():
    assert set(builtin_model_names()) == {
        "llama", "kimi", "kimi_k3", "deepseek_r1", "deepseek_v3_1", "deepseek_v3_2",
        "deepseek_v4", "deepseek_v4_1", "qwen_3", "qwen_3_5", "qwen_3_coder", "mimo", "harmony",
        "minimax", "minimax_m3", "glm_4_7", "cohere", "exaone"}


def test_import_xmask_does_not_import_pydantic():
    import subprocess
    import sys
    code = ("import sys, xmask; xmask.normalize_tool_choice; "
            "xmask.builtin_structural_tag.get_model_structural_tag_format('llama'); "
            "print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
