#!/usr/bin/env python
"""Compile vs serialize vs deserialize of compiled grammars: xmask and XGrammar, same run.

For a deterministic MaskBench sample (the same evenly strided file choice as
``bench_json_schema.py``; default 50 schemas) and the Llama-3 tokenizer, for each engine and each
schema: compile cold (``GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema,
strict_mode=False, any_whitespace=True)``), then ``compiled.serialize_json()``, then
``CompiledGrammar.deserialize_json(text, info)`` (both engines have these names), each timed
with ``time.perf_counter`` around the one call.  The serialized size is recorded, and for xmask
the first mask of the deserialized grammar is checked equal to the original's.  A schema an
engine refuses is "unsupported" for it; the summary covers schemas both engines compiled.

This is a benchmark: it prints a table and writes ``bench/results/deserialize.json``; nothing
here asserts on time.

Usage:  python bench/bench_deserialize.py [--schemas 50] [--data PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
from importlib import metadata
import json
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_json_schema import sample_files  # noqa: E402  -- same sample as the schema bench

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "results" / "deserialize.json"
OPTIONS = {"strict_mode": False, "any_whitespace": True}


def _time(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run_xmask(info, schema, text):
    import xmask

    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    compiled, t_compile = _time(lambda: compiler.compile_json_schema(schema, **OPTIONS))
    data, t_ser = _time(compiled.serialize_json)
    again, t_de = _time(lambda: xmask.CompiledGrammar.deserialize_json(data, info))
    a = np.full((1, (info.vocab_size + 31) // 32), -1, np.int32)
    b = a.copy()
    xmask.GrammarMatcher(compiled).fill_next_token_bitmask(a)
    xmask.GrammarMatcher(again).fill_next_token_bitmask(b)
    return {"compile_s": t_compile, "serialize_s": t_ser, "deserialize_s": t_de,
            "bytes": len(data), "first_mask_equal": bool((a == b).all())}


def run_xgrammar(info, schema, text):
    import xgrammar

    compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
    compiled, t_compile = _time(lambda: compiler.compile_json_schema(text, **OPTIONS))
    data, t_ser = _time(compiled.serialize_json)
    _, t_de = _time(lambda: xgrammar.CompiledGrammar.deserialize_json(data, info))
    return {"compile_s": t_compile, "serialize_s": t_ser, "deserialize_s": t_de,
            "bytes": len(data)}


def _summary(rows, engine, names):
    got = [rows[n][engine] for n in names]
    out = {}
    for key in ("compile_s", "serialize_s", "deserialize_s", "bytes"):
        vals = [g[key] for g in got]
        out[key] = {"total": float(sum(vals)), "median": float(statistics.median(vals)),
                    "max": float(max(vals))}
    out["compile_over_deserialize_median"] = float(statistics.median(
        g["compile_s"] / g["deserialize_s"] for g in got))
    return out


def _fmt_ms(s):
    return f"{s * 1e3:9.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemas", type=int, default=50)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args(argv)

    import xgrammar
    from transformers import PreTrainedTokenizerFast

    import xmask

    data = pathlib.Path(args.data)
    tok_file = data / "tokenizers" / "llama3" / "tokenizer.json"
    hf = PreTrainedTokenizerFast(tokenizer_file=str(tok_file))
    infos = {"xmask": xmask.TokenizerInfo.from_huggingface(hf),
             "xgrammar": xgrammar.TokenizerInfo.from_huggingface(hf, stop_token_ids=[128009])}
    runners = {"xmask": run_xmask, "xgrammar": run_xgrammar}
    warm = {"type": "object", "properties": {"a": {"type": "string"}}}
    for eng, fn in runners.items():  # first-use costs (vocabulary tables, imports) not counted
        fn(infos[eng], warm, json.dumps(warm))

    rows = {}
    for f in sample_files(data / "maskbench", args.schemas):
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        text = json.dumps(schema)
        rows[f.name] = {}
        for eng, fn in runners.items():
            try:
                rows[f.name][eng] = fn(infos[eng], schema, text)
            except Exception as exc:  # an engine refusing a schema is a result, not a crash
                rows[f.name][eng] = {"unsupported": f"{type(exc).__name__}: {str(exc)[:120]}"}

    both = [n for n, r in rows.items() if all("compile_s" in r[e] for e in runners)]
    summary = {eng: _summary(rows, eng, both) for eng in runners} if both else {}
    unsupported = {eng: sum("unsupported" in r[eng] for r in rows.values()) for eng in runners}
    mismatched = [n for n, r in rows.items() if r["xmask"].get("first_mask_equal") is False]

    print(f"MaskBench sample: {len(rows)} schemas, Llama-3; both engines compiled {len(both)} "
          f"(unsupported: {unsupported})")
    print(f"{'engine':10s} {'step':12s} {'total ms':>9s} {'median ms':>9s} {'max ms':>9s}")
    for eng, s in summary.items():
        for step in ("compile_s", "serialize_s", "deserialize_s"):
            v = s[step]
            print(f"{eng:10s} {step[:-2]:12s} {_fmt_ms(v['total'])} {_fmt_ms(v['median'])} "
                  f"{_fmt_ms(v['max'])}")
        print(f"{eng:10s} {'size KiB':12s} {s['bytes']['total'] / 1024:9.0f} "
              f"{s['bytes']['median'] / 1024:9.1f} {s['bytes']['max'] / 1024:9.1f}")
        print(f"{eng:10s} compile/deserialize (median per schema): "
              f"{s['compile_over_deserialize_median']:.1f}x")
    ratios = {}
    if summary:
        for step in ("compile_s", "serialize_s", "deserialize_s"):
            ratios[step] = summary["xmask"][step]["total"] / summary["xgrammar"][step]["total"]
        print("xmask / xgrammar total time: " + ", ".join(
            f"{k[:-2]} {v:.2f}x" for k, v in ratios.items()))
    if mismatched:
        print(f"FIRST MASK DIFFERS after deserialize: {mismatched}")

    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "versions": {"xmask": xmask.__version__, "xgrammar": metadata.version("xgrammar"),
                     "serialization": xmask.get_serialization_version()},
        "options": OPTIONS, "schemas": len(rows), "both_compiled": len(both),
        "unsupported": unsupported, "first_mask_mismatches": mismatched,
        "summary": summary, "xmask_over_xgrammar_total": ratios, "rows": rows,
    }, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
