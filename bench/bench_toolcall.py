#!/usr/bin/env python
"""Tool-calling benchmark: structural tags with 1, 16 and 128 tools, xmask vs XGrammar.

The request a server builds for tool calling (Hermes / Qwen style, as vLLM and SGLang send it):
free text until ``<tool_call>``, then ``{"name": "<tool>", "arguments": <args>}`` where the
arguments must match that tool's JSON schema, then ``</tool_call>``; any number of calls
(``triggered_tags``, XGrammar 0.2.8's structural-tag JSON, handed to both engines as text).
The tools are synthetic but realistic: 1-6 parameters each (strings, integers, numbers,
booleans, enums, string arrays, a nested object), some required, drawn from a fixed seed.

For each tool count and engine, in one process:

* compile, cold (``GrammarCompiler(info, cache_enabled=False).compile_structural_tag(text)``,
  after one warm-up compile of another tag per engine so one-time process costs are not
  counted), and time to first mask (compile + matcher + first fill);
* per-token fill time while walking an assistant message (free text, two calls, free text
  between and after them; tokenized without special tokens): every token is checked against the
  mask and accepted, then the stop token must be allowed.  Two passes with new matchers on one
  compiled grammar: the FIRST pass meets states no fill has classified yet (xmask's lazy cache),
  the SECOND shows the steady state.  Fill times are split by region: ``free_text`` (tokens
  outside any call), ``arguments`` (inside a call's JSON arguments) and ``tags`` (the rest of a
  call: trigger, name, closing tag).

``--think-budget N``: the message starts with a reasoning block ``<think>...</think>`` whose
text is ``any_text`` with ``max_tokens: N`` (a runtime token budget), filled to exactly N tokens
so the last one meets the budget's end (region ``think``; its p99/max show that step).

Timing is time.perf_counter_ns around the Python call.  Nothing here asserts on timings.

Usage:  python bench/bench_toolcall.py [--tools 1,16,128] [--tokenizer llama3] [--engines xmask,xgrammar]
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import random
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402  -- tokenizer-info adapters and helpers

DEFAULT_OUT = bj.REPO / "bench" / "results" / "bench_toolcall.json"
TOKENIZER_FILES = {"llama3": ("llama3", 128256), "qwen2.5": ("qwen2.5", 151936)}
perf = time.perf_counter_ns

WORDS = ["city", "unit", "date", "query", "limit", "offset", "verbose", "mode", "user_id", "path",
         "timeout", "tags", "lang", "priority", "region", "format", "max_results", "location",
         "currency", "amount", "email", "title", "body", "channel", "start", "end", "radius"]
ENUMS = [["celsius", "fahrenheit"], ["asc", "desc"], ["low", "medium", "high"], ["json", "text"]]


# ----------------------------------------------------------------------------------------------
# tools, the structural tag, and a message that calls two of them


def make_param(rng: random.Random):
    kind = rng.choice(["string", "string", "integer", "number", "boolean", "enum", "array", "object"])
    if kind == "enum":
        return {"type": "string", "enum": rng.choice(ENUMS)}
    if kind == "array":
        return {"type": "array", "items": {"type": "string"}, "maxItems": 5}
    if kind == "object":
        return {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"], "additionalProperties": False}
    if kind == "integer":
        return {"type": "integer", "minimum": 0, "maximum": 1000}
    return {"type": kind}


def make_tools(n: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    tools = []
    for i in range(n):
        names = rng.sample(WORDS, rng.randint(1, 6))
        props = {name: make_param(rng) for name in names}
        required = [name for name in names if rng.random() < 0.6] or names[:1]
        tools.append({"name": f"tool_{i:03d}",
                      "parameters": {"type": "object", "properties": props, "required": required,
                                     "additionalProperties": False}})
    return tools


def structural_tag(tools: list, think_budget: int = 0) -> str:
    tags = [{"type": "tag", "begin": f'<tool_call>\n{{"name": "{t["name"]}", "arguments": ',
             "content": {"type": "json_schema", "json_schema": t["parameters"]},
             "end": "}\n</tool_call>"} for t in tools]
    fmt = {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": tags}
    if think_budget:
        think = {"type": "tag", "begin": "<think>", "end": "</think>",
                 "content": {"type": "any_text", "max_tokens": think_budget}}
        fmt = {"type": "sequence", "elements": [think, fmt]}
    return json.dumps({"type": "structural_tag", "format": fmt})


THINKING = ("The user wants the weather and a booking, so I should call the two tools with the "
            "arguments they gave; the city is clear, the dates need care, and nothing else is "
            "needed before the calls. ") * 40


def think_text(tok, budget: int) -> str:
    """Reasoning text of exactly ``budget`` tokens inside ``<think>...</think>``."""
    words = THINKING.split(" ")
    lo, hi = 0, len(words)
    while lo < hi:  # the most words whose block keeps the text within the budget
        mid = (lo + hi + 1) // 2
        if _inner_tokens(tok, " ".join(words[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def _inner_tokens(tok, text: str) -> int:
    ids = tok.encode("<think>" + text + "</think>", add_special_tokens=False)
    return len(ids) - len(tok.encode("<think></think>", add_special_tokens=False))


def instance(schema: dict, rng: random.Random):
    t = schema.get("type")
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if t == "object":
        props = schema["properties"]
        keep = [k for k in props if k in schema.get("required", []) or rng.random() < 0.5]
        return {k: instance(props[k], rng) for k in keep}
    if t == "array":
        return [instance(schema["items"], rng) for _ in range(rng.randint(0, 3))]
    if t == "integer":
        return rng.randint(schema.get("minimum", 0), schema.get("maximum", 99))
    if t == "number":
        return round(rng.uniform(-90, 90), 4)
    if t == "boolean":
        return rng.random() < 0.5
    return rng.choice(["Paris", "a short note", "data/report.csv", "Zürich — 東京", "x"])


def message(tools: list, seed: int = 1, think: str = None):
    """The assistant message and its regions as [(start, end, region)] character spans."""
    rng = random.Random(seed)
    parts, spans, pos = [], [], 0

    def add(text, region):
        nonlocal pos
        parts.append(text)
        spans.append((pos, pos + len(text), region))
        pos += len(text)

    if think is not None:
        add("<think>", "tags")
        add(think, "think")
        add("</think>", "tags")

    add("Let me check both of those for you.\n", "free_text")
    for k, tool in enumerate(rng.sample(tools, min(2, len(tools))) if len(tools) > 1 else tools * 2):
        add(f'<tool_call>\n{{"name": "{tool["name"]}", "arguments": ', "tags")
        add(json.dumps(instance(tool["parameters"], rng), ensure_ascii=False), "arguments")
        add("}\n</tool_call>", "tags")
        add("\n" if k == 0 else "\nI will report back once the results are in.", "free_text")
    return "".join(parts), spans


def token_regions(tok, text: str, spans) -> tuple:
    enc = tok.encode(text, add_special_tokens=False)
    regions = []
    for start, _ in enc.offsets:
        regions.append(next((r for s, e, r in spans if s <= start < e), "free_text"))
    return list(enc.ids), regions


# ----------------------------------------------------------------------------------------------
# one engine, one tool count


def run_engine(engine, tag_text: str, ids, regions) -> dict:
    mod = engine.mod
    out = {}
    gc.collect()
    compiler = mod.GrammarCompiler(engine.info, cache_enabled=False)
    t0 = perf()
    try:
        compiled = compiler.compile_structural_tag(tag_text)
    except Exception as e:  # noqa: BLE001 -- report, do not stop the table
        return {"error": bj._err(e)}
    t1 = perf()
    m = mod.GrammarMatcher(compiled)
    m.fill_next_token_bitmask(engine.bitmask, 0)
    t2 = perf()
    out["compile_ms"] = (t1 - t0) / 1e6
    out["ttfm_ms"] = (t2 - t0) / 1e6
    for pass_name in ("first_pass", "second_pass"):
        m = mod.GrammarMatcher(compiled)
        by_region: dict = {"all": [], "free_text": [], "arguments": [], "tags": [], "think": []}
        for tid, region in zip(ids, regions):
            t0 = perf()
            m.fill_next_token_bitmask(engine.bitmask, 0)
            dt = perf() - t0
            by_region["all"].append(dt)
            by_region[region].append(dt)
            if not engine.allowed(tid) or not m.accept_token(tid):
                return {**out, "error": f"{pass_name}: token {tid} rejected in {region}"}
        m.fill_next_token_bitmask(engine.bitmask, 0)
        if not engine.allowed(engine.stop_id):
            return {**out, "error": f"{pass_name}: stop token not allowed at the end"}
        out[pass_name] = {k: _stats(v) for k, v in by_region.items() if v or k != "think"}
    return out


def _stats(ns: list) -> dict:
    s = bj._stats_us(ns)
    if ns:
        s["p999"] = float(np.percentile(np.asarray(ns, dtype=np.float64) / 1e3, 99.9))
    return s


def make_engine(name: str, tok, tok_path, vocab_size: int, stop_id: int):
    cls = {"xmask": bj.XmaskEngine, "xgrammar": bj.XGrammarEngine}[name]
    engine = cls(tok, tok_path, vocab_size, stop_id, reps=1)
    engine.info = engine.make_tokenizer_info()
    engine.bitmask = engine.mod.allocate_token_bitmask(1, vocab_size)
    engine.words = engine._words_view(engine.bitmask)
    # one-time process costs (imports, per-tokenizer tables) are not a tool count's compile
    warm = structural_tag(make_tools(1, seed=99))
    matcher = engine.mod.GrammarMatcher(
        engine.mod.GrammarCompiler(engine.info, cache_enabled=False).compile_structural_tag(warm))
    matcher.fill_next_token_bitmask(engine.bitmask, 0)
    return engine


def print_table(results: dict, engines: list) -> None:
    def f(v, nd=1):
        return "-" if v is None else f"{v:,.{nd}f}"

    print(f"\n{'tools':>5}  {'engine':<9} {'compile ms':>11} {'TTFM ms':>9}  "
          f"{'steady mean/p99 us: all':>24} {'free text':>16} {'arguments':>16}  {'1st pass mean/p99':>18}")
    for n, per_engine in results.items():
        for name in engines:
            r = per_engine.get(name)
            if r is None:
                continue
            if "second_pass" not in r:
                print(f"{n:>5}  {name:<9} {r.get('error', '?')}")
                continue
            s, fp = r["second_pass"], r["first_pass"]["all"]
            cols = [f"{f(s[k]['mean'], 2)}/{f(s[k]['p99'], 1)}" for k in ("all", "free_text", "arguments")]
            print(f"{n:>5}  {name:<9} {f(r['compile_ms']):>11} {f(r['ttfm_ms']):>9}  {cols[0]:>24} "
                  f"{cols[1]:>16} {cols[2]:>16}  {f(fp['mean'], 1) + '/' + f(fp['p99'], 0):>18}")
            if "think" in s:
                t = s["think"]
                print(f"{'':>5}  {'':<9} think (budgeted any_text): mean {f(t['mean'], 2)} us, "
                      f"p99 {f(t['p99'], 1)} us, max {f(t['max'], 1)} us over {t.get('n', '?')} tokens")
        a, b = per_engine.get("xmask", {}), per_engine.get("xgrammar", {})
        if "second_pass" in a and "second_pass" in b:
            print(f"{'':>5}  {'ratio':<9} compile xgrammar/xmask {b['compile_ms'] / a['compile_ms']:.1f}x, "
                  f"steady mean {b['second_pass']['all']['mean'] / a['second_pass']['all']['mean']:.1f}x, "
                  f"p99 {b['second_pass']['all']['p99'] / a['second_pass']['all']['p99']:.1f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default="1,16,128")
    ap.add_argument("--tokenizer", default="llama3", choices=sorted(TOKENIZER_FILES))
    ap.add_argument("--engines", default="xmask,xgrammar")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("--think-budget", type=int, default=0,
                    help="prefix a <think> block of any_text with this max_tokens (0: none)")
    args = ap.parse_args(argv)

    from tokenizers import Tokenizer

    dirname, vocab_size = TOKENIZER_FILES[args.tokenizer]
    tok_path = args.data / "tokenizers" / dirname / "tokenizer.json"
    tok = Tokenizer.from_file(str(tok_path))
    stop_id = tok.token_to_id("<|eot_id|>") if args.tokenizer == "llama3" else tok.token_to_id("<|im_end|>")
    engines = []
    for name in args.engines.split(","):
        try:
            engines.append(make_engine(name, tok, tok_path, vocab_size, stop_id))
        except ImportError as e:
            print(f"skipping {name}: {e}")
    results = {}
    for n in [int(x) for x in args.tools.split(",")]:
        tools = make_tools(n)
        tag_text = structural_tag(tools, args.think_budget)
        think = think_text(tok, args.think_budget) if args.think_budget else None
        text, spans = message(tools, think=think)
        ids, regions = token_regions(tok, text, spans)
        results[n] = {}
        for engine in engines:
            results[n][engine.name] = run_engine(engine, tag_text, ids, regions)
            print(f"{n} tools, {engine.name}: {json.dumps(results[n][engine.name])[:160]}", flush=True)
    print_table(results, [e.name for e in engines])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"tokenizer": args.tokenizer, "cpu": bj._cpu_model(),
            "versions": {d: bj._version(d) for d in ("xgrammar", "xmask")}}
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
