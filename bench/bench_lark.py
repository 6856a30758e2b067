#!/usr/bin/env python
"""Lark grammars (``compile_lark``): xmask vs XGrammar, same run, on Llama-3.

For the realistic grammars of ``tests/grammar/test_lark.py`` (SQL with case-insensitive
keywords, a left-recursive calculator, JSON-ish with ``%ignore WS``, a tool call with a lazy
``stop`` text and ``%json`` arguments): compile time (caches off, after one warm-up compile
per engine) and the mean / p99 time of ``fill_next_token_bitmask`` along the test documents
(first pass: xmask classifies states lazily; later passes: warm).  Prints a table and writes
``bench/results/lark.json``; no assertions.  XGrammar is skipped when not installed.

Usage:  python bench/bench_lark.py [--passes 3]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import warnings

import numpy as np

import xmask

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "grammar"))
OUT = REPO / "bench" / "results" / "lark.json"


def measure(mod, info, text, docs_ids, passes, vocab):
    t0 = time.perf_counter()
    compiled = mod.GrammarCompiler(info, cache_enabled=False).compile_lark(text)
    compile_ms = (time.perf_counter() - t0) * 1e3
    bm = mod.allocate_token_bitmask(1, vocab)
    first, warm = [], []
    for p in range(passes):
        for ids in docs_ids:
            m = mod.GrammarMatcher(compiled)
            for tid in ids:
                t = time.perf_counter()
                m.fill_next_token_bitmask(bm)
                (first if p == 0 else warm).append(time.perf_counter() - t)
                m.accept_token(tid)
    us = lambda xs: (float(np.mean(xs) * 1e6), float(np.percentile(xs, 99) * 1e6)) if xs else (0, 0)
    return {"compile_ms": compile_ms, "first_pass_us": us(first), "warm_us": us(warm)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    import tokenizers
    import test_lark as T
    from conftest import tokenizer_json

    path = str(tokenizer_json("llama3"))
    tok = tokenizers.Tokenizer.from_file(path)
    info = xmask.TokenizerInfo.from_huggingface(path)
    engines = {"xmask": (xmask, info)}
    try:
        import transformers
        import xgrammar as xgr

        hf = transformers.PreTrainedTokenizerFast(tokenizer_file=path)
        engines["xgrammar"] = (xgr, xgr.TokenizerInfo.from_huggingface(
            hf, vocab_size=info.vocab_size, stop_token_ids=list(info.stop_token_ids)))
    except ImportError:
        print("xgrammar not installed: xmask only")
    for mod, inf in engines.values():  # warm-up (vocabulary tables)
        mod.GrammarCompiler(inf).compile_regex("a")
    cases = {"sql": (T.SQL, T.SQL_DOCS), "calc": (T.CALC, T.CALC_DOCS),
             "json": (T.JSONISH, T.JSONISH_DOCS), "toolcall": (T.TOOLCALL, T.TOOLCALL_DOCS)}
    results = {}
    print(f"{'grammar':9} {'engine':9} {'compile ms':>10} {'1st mean/p99 us':>17} "
          f"{'warm mean/p99 us':>17}")
    for name, (text, docs) in cases.items():
        docs_ids = [tok.encode(d, add_special_tokens=False).ids for d in docs]
        for eng, (mod, inf) in engines.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = measure(mod, inf, text, docs_ids, args.passes, info.vocab_size)
            results.setdefault(name, {})[eng] = r
            print(f"{name:9} {eng:9} {r['compile_ms']:10.1f} "
                  f"{r['first_pass_us'][0]:8.1f}/{r['first_pass_us'][1]:<8.1f} "
                  f"{r['warm_us'][0]:8.1f}/{r['warm_us'][1]:<8.1f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
