#!/usr/bin/env python
"""Whole-token grammar elements (Token(...) / ExcludeToken(...)): xmask vs XGrammar, same run.

On Llama-3 (128,256 ids), for a few grammars that mix bytes and whole tokens: compile time
(caches off, after one warm-up compile per engine) and, at each position of a fixed path, the mean / p99 time of
``fill_next_token_bitmask`` and of ``accept_token`` / ``accept_string``.  Positions where a
token edge is a stack top are the new work (one bitset OR per top).  Prints a table and writes
``bench/results/token_sets.json``; no assertions.

Usage:  python bench/bench_token_sets.py [--reps 200]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
import warnings

import numpy as np

import xmask
from xmask.grammar.ir import Bytes, CharClass, Choice, Grammar, Repeat, Seq, TokenSet

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "tokenizers" / "llama3" / "tokenizer.json"
OUT = REPO / "bench" / "results" / "token_sets.json"
TAG = 128010  # <|python_tag|>
LETTERS = CharClass(((97, 122),))

CASES = {
    "mixed": (Grammar({"root": Seq((Bytes(b"x"), TokenSet((TAG,)), Bytes(b"{"),
                                    Repeat(LETTERS, 1, None), Bytes(b"}")))}),
              ["x", TAG, "{", "ab", "}"]),
    "exclude_token_star": (Grammar({"root": Seq((Bytes(b"<"), Repeat(
        TokenSet((5, 6), negated=True), 0, None), Bytes(b">")))}), ["<", 128000, 1000, 7]),
    "token_or_text": (Grammar({"root": Repeat(Choice((TokenSet((TAG, 128000)), Repeat(
        LETTERS, 1, None))), 1, None)}), [TAG, "abc", 128000, "de"]),
}


def timed(fn, reps):
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    out = np.asarray(out) * 1e6
    return float(out.mean()), float(np.percentile(out, 99))


def run_engine(name, compile_fn, matcher_fn, alloc, items, reps):
    t0 = time.perf_counter()
    compiled = compile_fn()
    compile_ms = (time.perf_counter() - t0) * 1e3
    m = matcher_fn(compiled)
    bm = alloc()
    fills = []
    for item in items + [None]:
        fills.append(timed(lambda: m.fill_next_token_bitmask(bm), reps))
        if item is None:
            break
        ok = m.accept_token(item) if isinstance(item, int) else m.accept_string(item)
        assert ok, (name, item)
    return {"compile_ms": compile_ms, "fill_us": fills}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    info = xmask.TokenizerInfo.from_huggingface(str(DATA), vocab_size=128256)
    results = {}
    try:
        import xgrammar as xgr

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            xinfo = xgr.TokenizerInfo(list(info.decoded_vocab), vocab_size=info.vocab_size,
                                      stop_token_ids=info.stop_token_ids)
    except ImportError:
        xgr = None
    # warm-up: the tokenizer's shared tables are built by the first compile of each engine
    xmask.GrammarCompiler(info, cache_enabled=False).compile_grammar('root ::= "a"')
    if xgr is not None:
        xgr.GrammarCompiler(xinfo, cache_enabled=False).compile_grammar('root ::= "a"')
    for case, (grammar, items) in CASES.items():
        row = {"xmask": run_engine(
            "xmask", lambda: xmask.GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar),
            xmask.GrammarMatcher, lambda: xmask.allocate_token_bitmask(1, info.vocab_size),
            items, args.reps)}
        if xgr is not None:
            text = str(grammar)
            row["xgrammar"] = run_engine(
                "xgrammar",
                lambda: xgr.GrammarCompiler(xinfo, cache_enabled=False).compile_grammar(text),
                xgr.GrammarMatcher, lambda: xgr.allocate_token_bitmask(1, info.vocab_size),
                items, args.reps)
        results[case] = row
        print(f"\n{case}: {str(grammar).strip()}")
        for eng, r in row.items():
            fills = "  ".join(f"{m:6.1f}/{p:6.1f}" for m, p in r["fill_us"])
            print(f"  {eng:9s} compile {r['compile_ms']:7.1f} ms   fill mean/p99 us per position: {fills}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1))
    print(f"\nwritten {OUT}")


if __name__ == "__main__":
    main()
