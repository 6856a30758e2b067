"""Realistic assistant messages in each model family's tool-call syntax, for the per-model
structural-tag tests (xmask's and the differential check against XGrammar).

A message is ``think(reasoning) + text + calls``: two tools, ``get_weather(city: string, unit:
enum, days: integer)`` and ``get_time(timezone: string)``, rendered the way each family's chat
template writes them. ``mutations`` give the malformed variants every family must reject:
an unknown tool, an argument of the wrong type, a missing required argument, an unclosed call.
"""

import json

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"}},
        "required": ["city", "unit"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time",
    "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}},
                   "required": ["timezone"]}}}
TOOLS = [WEATHER, TIME]

GOOD_CALLS = [("get_weather", [("city", "Paris"), ("unit", "celsius"), ("days", 3)]),
              ("get_time", [("timezone", "Europe/Paris")])]
MALFORMED_CALLS = {
    "unknown tool": [GOOD_CALLS[0], ("get_date", [("timezone", "Europe/Paris")])],
    "bad argument type": [("get_weather", [("city", "Paris"), ("unit", "celsius"),
                                           ("days", "three")]), GOOD_CALLS[1]],
    "bad enum value": [("get_weather", [("city", "Paris"), ("unit", "kelvin")]), GOOD_CALLS[1]],
    "missing required argument": [GOOD_CALLS[0], ("get_time", [])],
}
THOUGHT = "The user wants the weather in Paris and the local time there."
TEXT = "Let me look that up."


def _json_args(args):
    return json.dumps(dict(args))


def _xml_value(value):
    return value if isinstance(value, str) else json.dumps(value)


def _think(begin, end, after=""):
    # "enabled": the prompt already opened the block; "auto": the model writes it whole.
    def render(reasoning):
        if reasoning == "disabled":
            return ""
        return (begin if reasoning == "auto" else "") + THOUGHT + end + after
    return render


def _model_think(begin, end, after=""):
    # Families whose prompt never opens the block (the model writes <think> itself).
    def render(reasoning):
        return "" if reasoning == "disabled" else begin + THOUGHT + end + after
    return render


def _no_think(reasoning):
    return ""


def _joined(call, sep="", head="", tail=""):
    def render(calls):
        if not calls:
            return ""
        return head + sep.join(call(name, args, i) for i, (name, args) in enumerate(calls)) + tail
    return render


def _dsml(calls_word, invoke, parameter):
    def call(name, args, i):
        params = "".join(
            f'<｜DSML｜{parameter} name="{k}" string="{str(isinstance(v, str)).lower()}">'
            f"{_xml_value(v)}</｜DSML｜{parameter}>\n" for k, v in args)
        return f'<｜DSML｜{invoke} name="{name}">\n{params}</｜DSML｜{invoke}>\n'
    return _joined(call, head=f"\n\n<｜DSML｜{calls_word}>\n", tail=f"</｜DSML｜{calls_word}>")


NS = "]<]minimax[>["
K3_OPEN, K3_CLOSE, K3_SEP = "<|open|>", "<|close|>", "<|sep|>"


def _k3_type(value):
    return "string" if isinstance(value, str) else "number"


def _k3_think(reasoning):
    if reasoning == "disabled":
        return ""  # the prompt opened the response block
    opener = f"{K3_OPEN}think{K3_SEP}" if reasoning == "auto" else ""
    return (f"{opener}{THOUGHT}{K3_CLOSE}think{K3_SEP}{K3_OPEN}response{K3_SEP}")


def _k3_calls(calls):
    if not calls:
        return f"{K3_CLOSE}response{K3_SEP}{K3_CLOSE}message{K3_SEP}"
    body = "".join(
        f'{K3_OPEN}call tool="{name}" index="{i + 1}"{K3_SEP}'
        + "".join(f'{K3_OPEN}argument key="{k}" type="{_k3_type(v)}"{K3_SEP}{_xml_value(v)}'
                  f"{K3_CLOSE}argument{K3_SEP}" for k, v in args)
        + f"{K3_CLOSE}call{K3_SEP}" for i, (name, args) in enumerate(calls))
    return (f"{K3_CLOSE}response{K3_SEP}{K3_OPEN}tools{K3_SEP}{body}{K3_CLOSE}tools{K3_SEP}"
            f"{K3_CLOSE}message{K3_SEP}")


def _harmony_think(reasoning):
    if reasoning == "disabled":
        return ""
    return f"<|channel|>analysis<|message|>{THOUGHT}<|end|><|start|>assistant"


def _harmony_calls(calls):
    return "<|start|>assistant".join(
        f"<|channel|>commentary to=functions.{name}<|constrain|>json<|message|>"
        f"{_json_args(args)}<|call|>" for name, args in calls)


# model -> (tokenizer folder, think renderer, text before the calls, calls renderer)
FAMILIES = {
    "llama": ("llama3", _no_think, TEXT + "\n", _joined(
        lambda n, a, i: f'{{"name": "{n}", "parameters": {_json_args(a)}}}', sep="\n")),
    "qwen_3": ("qwen2.5", _think("<think>", "</think>", "\n\n"), TEXT + "\n", _joined(
        lambda n, a, i: f'<tool_call>\n{{"name": "{n}", "arguments": {_json_args(a)}}}\n'
                        "</tool_call>", sep="\n")),
    "exaone": ("qwen2.5", _think("<think>", "</think>", "\n\n"), TEXT, _joined(
        lambda n, a, i: f'<tool_call>{{"name": "{n}", "arguments": {_json_args(a)}}}</tool_call>')),
    "qwen_3_5": ("qwen2.5", _think("<think>", "</think>", "\n\n"), TEXT + "\n", _joined(
        lambda n, a, i: f"<tool_call>\n<function={n}>\n" + "".join(
            f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in a)
        + "</function>\n</tool_call>", sep="\n")),
    "mimo": ("qwen2.5", _model_think("<think>", "</think>"), TEXT, _joined(
        lambda n, a, i: f"<tool_call><function={n}>" + "".join(
            f"<parameter={k}>{_xml_value(v)}</parameter>" for k, v in a)
        + "</function></tool_call>")),
    "glm_4_7": ("qwen2.5", _think("<think>", "</think>"), TEXT, _joined(
        lambda n, a, i: f"<tool_call>{n}\n" + "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{_xml_value(v)}</arg_value>\n" for k, v in a)
        + "</tool_call>", sep="\n")),
    "kimi": ("qwen2.5", _think("<think>", "</think>"), TEXT, _joined(
        lambda n, a, i: f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>"
                        f"{_json_args(a)}<|tool_call_end|>",
        head="<|tool_calls_section_begin|>", tail="<|tool_calls_section_end|>")),
    "kimi_k3": ("qwen2.5", _k3_think, TEXT, _k3_calls),
    "deepseek_r1": ("deepseek-v3", _think("<think>", "</think>"), TEXT, _joined(
        lambda n, a, i: f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n"
                        f"{_json_args(a)}\n```<｜tool▁call▁end｜>", sep="\n",
        head="<｜tool▁calls▁begin｜>", tail="<｜tool▁calls▁end｜>")),
    "deepseek_v3_1": ("deepseek-v3", _think("<think>", "</think>"), TEXT, _joined(
        lambda n, a, i: f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_json_args(a)}"
                        "<｜tool▁call▁end｜>",
        head="<｜tool▁calls▁begin｜>", tail="<｜tool▁calls▁end｜>")),
    "deepseek_v3_2": ("deepseek-v3", _think("<think>", "</think>"), TEXT,
                      _dsml("function_calls", "invoke", "parameter")),
    "deepseek_v4": ("deepseek-v3", _think("<think>", "</think>"), TEXT,
                    _dsml("tool_calls", "invoke", "parameter")),
    "deepseek_v4_1": ("deepseek-v3", _think("<think>", "</think>"), TEXT,
                      _dsml(" calls", " invoke", " parameter")),
    "minimax": ("qwen2.5", lambda r: "\n</think>\n\n\n\n" if r == "disabled"
                else _think("<think>", "</think>", "\n\n")(r), TEXT, _joined(
        lambda n, a, i: f'<invoke name="{n}">\n' + "".join(
            f'<parameter name="{k}">{_xml_value(v)}</parameter>\n' for k, v in a) + "</invoke>\n",
        head="<minimax:tool_call>\n", tail="</minimax:tool_call>")),
    "minimax_m3": ("qwen2.5", _think("<mm:think>", "</mm:think>"), TEXT, _joined(
        lambda n, a, i: f'{NS}<invoke name="{n}">' + "".join(
            f"{NS}<{k}>{_xml_value(v)}{NS}</{k}>" for k, v in a) + f"{NS}</invoke>\n",
        head=f"{NS}<tool_call>\n", tail=f"{NS}</tool_call>")),
    "cohere": ("llama3", _think("<|START_THINKING|>", "<|END_THINKING|>"), TEXT, _joined(
        lambda n, a, i: f'<cofl:tool_call id="{i}" name="{n}">' + "".join(
            f'<cofl:value name="{k}" type="{"raw" if isinstance(v, str) else "json"}">'
            f"{_xml_value(v)}</cofl:value>" for k, v in a) + "</cofl:tool_call>",
        head="<cofl:tool_calls>", tail="</cofl:tool_calls>")),
    "harmony": ("gpt-oss-o200k", _harmony_think, "", _harmony_calls),
}
# Families with no reasoning block: only "disabled" is meaningful.
NO_REASONING = {"llama"}


def message(model, reasoning="enabled", calls=GOOD_CALLS, text=None):
    """The assistant output of ``model`` for ``calls`` (``text`` before them: default the
    family's; harmony has no plain-text channel in a tool turn)."""
    _, think, default_text, render = FAMILIES[model]
    return think(reasoning) + (default_text if text is None else text) + render(calls)


def plain_text(model, reasoning="enabled", text="It is sunny in Paris, 18 degrees."):
    """An answer without tool calls (Harmony: a final-channel message)."""
    if model == "harmony":
        text = f"<|channel|>final<|message|>{text}<|end|>"
    return message(model, reasoning, calls=[], text=text)


def unclosed(model, reasoning="enabled"):
    """The message with its last call's closing marker cut short."""
    return message(model, reasoning)[:-3]
