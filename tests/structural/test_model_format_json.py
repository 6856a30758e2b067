"""The per-model formats as JSON: their shape for each tool_choice, parallel_tool_calls and
reasoning mode, and (with XGrammar installed) equality with XGrammar 0.2.8's JSON except for
the documented deliberate differences."""

import json

import pytest
from model_messages import TOOLS

import xmask
from xmask.builtin_structural_tag import builtin_model_names, get_model_structural_tag_format

CHOICES = ["auto", "required", "none", {"type": "function", "function": {"name": "get_time"}}]
REASONING = ["enabled", "disabled", "auto"]


def fmt(model, choice="auto", reasoning="disabled", **kw):
    return get_model_structural_tag_format(model, TOOLS, choice, reasoning, **kw)


def walk(node):
    """Every format dict in a format tree."""
    if isinstance(node, dict):
        if "type" in node:
            yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


@pytest.mark.parametrize("model", builtin_model_names())
def test_every_family_builds_every_combination_as_plain_json(model):
    for choice in CHOICES:
        for reasoning in REASONING:
            for parallel in (True, False):
                out = fmt(model, choice, reasoning, parallel_tool_calls=parallel)
                assert json.loads(json.dumps(out)) == out


@pytest.mark.parametrize("model", sorted(set(builtin_model_names()) - {"harmony"}))
def test_tool_arguments_carry_the_schema_and_options(model):
    out = fmt(model, any_order=True, max_whitespace_cnt=2)
    schemas = [n for n in walk(out) if n["type"] == "json_schema"]
    assert [s["json_schema"] for s in schemas] == [t["function"]["parameters"] for t in TOOLS]
    assert all(s["any_order"] and s["max_whitespace_cnt"] == 2 for s in schemas)


def test_llama_shapes():
    auto = fmt("llama")
    assert auto["type"] == "triggered_tags" and auto["triggers"] == ['{"name": ']
    assert [t["begin"] for t in auto["tags"]] == [
        '{"name": "get_weather", "parameters": ', '{"name": "get_time", "parameters": ']
    assert not auto["at_least_one"] and not auto["stop_after_first"]
    assert fmt("llama", "required")["at_least_one"]
    assert fmt("llama", parallel_tool_calls=False)["stop_after_first"]
    forced = fmt("llama", CHOICES[3])
    assert forced["type"] == "tag" and "get_time" in forced["begin"]
    assert fmt("llama", "none") == {"type": "any_text", "excludes": ["<think>", "</think>"]}
    assert fmt("llama", "none", exclude_special_tokens=False)["excludes"] == []


def test_reasoning_modes_shape_the_think_block():
    enabled, auto = fmt("qwen_3", reasoning="enabled"), fmt("qwen_3", reasoning="auto")
    block = enabled["elements"][0]["elements"][0]
    assert block["begin"] == "" and block["end"] == "</think>"  # the prompt opened the block
    assert auto["elements"][0]["type"] == "optional"
    assert auto["elements"][0]["content"]["elements"][0]["begin"] == "<think>"
    assert fmt("qwen_3", reasoning="disabled")["type"] == "triggered_tags"
    assert fmt("llama", reasoning="enabled") == fmt("llama", reasoning="disabled")
    # Deprecated bool aliases.
    assert fmt("qwen_3", reasoning=True) == enabled


def test_section_families_require_the_section():
    required = fmt("deepseek_v3_2", "required")
    assert [e["type"] for e in required["elements"]] == [
        "const_string", "tags_with_separator", "const_string"]
    assert required["elements"][0]["value"] == "\n\n<｜DSML｜function_calls>\n"
    assert required["elements"][1]["at_least_one"]
    # With no tool left, V4.1 keeps a calls block out of the text.
    assert "<｜DSML｜ calls>" in fmt("deepseek_v4_1", "none")["excludes"]
    assert fmt("deepseek_v4_1", "none", exclude_special_tokens=False)["excludes"] == [
        "<｜DSML｜ calls>"]


def has_call(format_node):
    return any(n["type"] == "tag" and n["end"] == "<|call|>" for n in walk(format_node))


@pytest.mark.parametrize("choice", ["required", CHOICES[3]])
@pytest.mark.parametrize("reasoning", REASONING)
@pytest.mark.parametrize("parallel", [True, False])
def test_harmony_required_and_forced_need_a_call(choice, reasoning, parallel):
    # XGrammar's tags_with_separator here has at_least_one=False, which accepts no call at
    # all; xmask's shape always passes through a call tag.
    out = fmt("harmony", choice, reasoning, parallel_tool_calls=parallel)
    assert has_call(out)
    assert out["type"] in ("sequence", "or", "tags_with_separator")
    if out["type"] == "tags_with_separator":
        assert out["at_least_one"] and all(t["end"] == "<|call|>" for t in out["tags"])
    elif out["type"] == "or":
        assert all(has_call(alt) for alt in out["elements"])


def xmask_dump(model, choice, reasoning, kwargs):
    return xmask.get_model_structural_tag(model, TOOLS, choice, reasoning, **kwargs).model_dump()


# Deliberate differences: harmony's required / forced choices need a call (see above).
def deliberately_different(model, choice):
    return model == "harmony" and choice != "auto" and choice != "none"


@pytest.mark.parametrize("model", builtin_model_names())
def test_same_json_as_xgrammar(model):
    xgr = pytest.importorskip("xgrammar")
    options = [dict(), dict(parallel_tool_calls=False), dict(any_order=True, max_whitespace_cnt=3),
               dict(exclude_special_tokens=False)]
    checked = 0
    for choice in CHOICES:
        if deliberately_different(model, choice):
            continue
        for reasoning in REASONING:
            for kwargs in options:
                ref = xgr.get_model_structural_tag(model, TOOLS, choice, reasoning, **kwargs)
                assert xmask_dump(model, choice, reasoning, kwargs) == ref.model_dump(), \
                    (choice, reasoning, kwargs)
                checked += 1
    assert checked >= 24


def dumped(format_json):
    """The format as a StructuralTag dump (defaults filled in)."""
    tag = {"type": "structural_tag", "format": format_json}
    return xmask.StructuralTag.model_validate(tag).model_dump()["format"]


def test_structural_tag_objects_and_aliases():
    pytest.importorskip("pydantic")
    stag = xmask.get_model_structural_tag("deepseek_v3_1", TOOLS, "required", "disabled")
    assert isinstance(stag, xmask.StructuralTag)
    assert stag.model_dump()["format"] == dumped(fmt("deepseek_v3_1", "required"))
    assert xmask.get_builtin_structural_tag is xmask.get_model_structural_tag
    from xmask.builtin_structural_tag import (get_qwen_3_coder_structural_tag,
                                              get_qwen_3_structural_tag)
    functions, _, _ = xmask.normalize_tool_choice(TOOLS)
    family = get_qwen_3_structural_tag(functions, [], "required", "disabled")
    assert family.model_dump()["format"] == dumped(fmt("qwen_3", "required"))
    # Raw tool dicts work too; a forced choice needs exactly the one tool.
    forced = get_qwen_3_coder_structural_tag(TOOLS[1:], tool_choice="forced", reasoning="disabled")
    assert forced.model_dump()["format"] == dumped(fmt("qwen_3_coder", CHOICES[3]))
    with pytest.raises(xmask.InvalidStructuralTagError) as err:
        get_qwen_3_structural_tag(TOOLS, tool_choice="forced")
    assert err.value.path == "tools"
    with pytest.raises(xmask.InvalidStructuralTagError) as err:
        get_qwen_3_structural_tag(TOOLS, tool_choice="none")
    assert err.value.path == "tool_choice"


def test_register_model_structural_tag():
    pytest.importorskip("pydantic")
    seen = {}

    @xmask.register_model_structural_tag("test_echo_model")
    def echo(tools, builtin_tools, choice, reasoning, **options):
        seen.update(tools=[t.function.name for t in tools], choice=choice, reasoning=reasoning,
                    options=options)
        return {"type": "structural_tag", "format": {"type": "const_string", "value": "x"}}

    stag = xmask.get_model_structural_tag("test_echo_model", TOOLS, "required", False,
                                          parallel_tool_calls=False)
    assert stag.format.value == "x"
    assert seen == {"tools": ["get_weather", "get_time"], "choice": "required",
                    "reasoning": "disabled",
                    "options": {"any_order": False, "exclude_special_tokens": True,
                                "max_whitespace_cnt": None, "parallel_tool_calls": False}}
    with pytest.raises(xmask.InvalidStructuralTagError):
        xmask.register_model_structural_tag("")
