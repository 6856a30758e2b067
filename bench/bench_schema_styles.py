"""Structural tags' json_schema content in each style: xmask vs XGrammar, same run.

For a realistic tool (string + integer + optional enum) written in each style, on Qwen2.5
(151,936 padded ids): compile time (a fresh compiler each time; xmask lazy and with
``precompute=True``), and the mask time of every step of one arguments document, first pass
(xmask classifies states lazily here) and second pass (warm).  Prints a table and writes
``bench/results/bench_schema_styles.json``.

    python bench/bench_schema_styles.py [--data DIR] [--styles qwen_xml,json] [--reps 3]
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import xmask  # noqa: E402
from xmask.grammar.schema_styles import STYLES, json_schema_format_grammar  # noqa: E402

TOOL = {"type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"},
                                         "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["location", "days"]}
D = "\uff5cDSML\uff5c"


def document(style):
    loc = "San Francisco, CA - downtown, near the bay; look for <b>fog</b> warnings"
    if style == "json":
        return json.dumps({"location": loc, "days": 5, "unit": "fahrenheit"})
    fmt = {
        "qwen_xml": "<parameter={k}>{v}</parameter>",
        "minimax_xml": '<parameter name="{k}">{v}</parameter>',
        "glm_xml": "<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>",
        "kimi_k3_xml": '<|open|>argument key="{k}" type="{t}"<|sep|>{v}<|close|>argument<|sep|>',
        "deepseek_xml": f'<{D}parameter name="{{k}}" string="{{s}}">{{v}}</{D}parameter>',
        "deepseek_v4_1_xml": f'<{D} parameter name="{{k}}" string="{{s}}">{{v}}</{D} parameter>',
        "cohere_xml": '<cofl:value name="{k}" type="{c}">{v}</cofl:value>',
        "minimax_m3_xml": "]<]minimax[>[<{k}>{v}]<]minimax[>[</{k}>",
    }[style]
    parts = [("location", loc, "string"), ("days", "5", "number"), ("unit", "fahrenheit", "string")]
    return "\n" + "\n".join(fmt.format(k=k, v=v, t=t, s="true" if t == "string" else "false",
                                       c="raw" if t == "string" else "json") for k, v, t in parts) + "\n"


def walk(matcher, bitmask, ids):
    out = []
    for t in ids:
        a = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        out.append(time.perf_counter() - a)
        assert matcher.accept_token(t)
    return np.array(out) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("XMASK_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--styles", default=",".join(STYLES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "bench_schema_styles.json"))
    args = ap.parse_args()
    path = str(pathlib.Path(args.data) / "tokenizers" / "qwen2.5" / "tokenizer.json")
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(path)
    info = xmask.TokenizerInfo.from_huggingface(path, vocab_size=151936)
    engines = {"xmask": None, "xmask-precompute": None}
    try:
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast
        ginfo = xgr.TokenizerInfo.from_huggingface(PreTrainedTokenizerFast(tokenizer_file=path), vocab_size=151936)
        engines["xgrammar"] = None
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"xgrammar skipped: {e}")
    xmask.GrammarCompiler(info).compile_grammar('root ::= "a"')  # warm-up (imports, tables)
    results = []
    print(f"{'style':18s} {'engine':17s} {'compile ms':>10s} {'1st mean us':>11s} {'1st max us':>10s} "
          f"{'warm mean':>9s} {'warm p99':>8s}")
    for style in args.styles.split(","):
        ids = tok.encode(document(style), add_special_tokens=False).ids
        for engine in engines:
            compile_s = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                if engine.startswith("xmask"):
                    comp = xmask.GrammarCompiler(info, precompute=engine == "xmask-precompute")
                    cg = comp.compile_grammar(json_schema_format_grammar(TOOL, style=style))
                else:
                    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": TOOL,
                                                                "style": style}}
                    cg = xgr.GrammarCompiler(ginfo, cache_enabled=False).compile_structural_tag(tag)
                compile_s.append(time.perf_counter() - t0)
            if engine.startswith("xmask"):
                m = xmask.GrammarMatcher(cg, terminate_without_stop_token=True)
                bm = xmask.allocate_token_bitmask(1, info.vocab_size)
            else:
                m = xgr.GrammarMatcher(cg, terminate_without_stop_token=True)
                bm = xgr.allocate_token_bitmask(1, 151936)
            first = walk(m, bm, ids)
            m.reset()
            warm = walk(m, bm, ids)
            row = {"style": style, "engine": engine, "tokens": len(ids),
                   "compile_ms": 1000 * statistics.median(compile_s), "first_mean_us": float(first.mean()),
                   "first_max_us": float(first.max()), "warm_mean_us": float(warm.mean()),
                   "warm_p99_us": float(np.percentile(warm, 99))}
            results.append(row)
            print(f"{style:18s} {engine:17s} {row['compile_ms']:10.1f} {row['first_mean_us']:11.1f} "
                  f"{row['first_max_us']:10.1f} {row['warm_mean_us']:9.1f} {row['warm_p99_us']:8.1f}")
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
