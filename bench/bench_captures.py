#!/usr/bin/env python
"""``GrammarMatcher.get_captures``: xmask vs XGrammar, same run, on Llama-3.

A Lark grammar of nested calls with three captured rules (``call``, ``name`` as "fn", ``arg``)
and documents of 5, 30 and 120 calls: the time to accept the document token by token, the
first ``get_captures()`` (xmask replays the logged input on its Earley recognizer then;
XGrammar records during accepting) and a second call (xmask: incremental, nothing new to
replay).  Checks that both engines report the same captures.  Prints a table and writes
``bench/results/captures.json``; no assertions.  XGrammar is skipped when not installed.

Usage:  python bench/bench_captures.py [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import xmask

REPO = pathlib.Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "results" / "captures.json"
GRAMMAR = ('start: call ("," call)*\n'
           'call[capture]: name "(" args ")"\n'
           'name[capture="fn"]: /[a-z_]+/\n'
           'args: (arg ("," arg)*)?\n'
           'arg[capture]: /[0-9]+/ | ESCAPED_STRING | call\n'
           '%import common.ESCAPED_STRING\n')


def document(n: int) -> str:
    return ",".join(f'get_weather_{"abcdefghij"[i % 10]}("Paris, France: more text {i}",'
                    f'{i * 37},now())' for i in range(n))


def run(make_matcher, ids):
    m = make_matcher()
    t0 = time.perf_counter()
    for t in ids:
        assert m.accept_token(t)
    t1 = time.perf_counter()
    caps = m.get_captures()
    t2 = time.perf_counter()
    m.get_captures()
    t3 = time.perf_counter()
    return caps, {"accept_ms": 1e3 * (t1 - t0), "first_get_ms": 1e3 * (t2 - t1),
                  "again_get_ms": 1e3 * (t3 - t2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("XMASK_DATA", str(REPO.parent / "shared" / "data")))
    args = ap.parse_args()
    path = str(pathlib.Path(args.data) / "tokenizers" / "llama3" / "tokenizer.json")
    import tokenizers

    tk = tokenizers.Tokenizer.from_file(path)
    info = xmask.TokenizerInfo.from_huggingface(path)
    engines = {"xmask": lambda cg=xmask.GrammarCompiler(info).compile_lark(GRAMMAR): xmask.GrammarMatcher(cg)}
    try:
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast

        ginfo = xgr.TokenizerInfo.from_huggingface(PreTrainedTokenizerFast(tokenizer_file=path))
        gcg = xgr.GrammarCompiler(ginfo).compile_grammar(xgr.Grammar.from_lark(GRAMMAR))
        engines["xgrammar"] = lambda: xgr.GrammarMatcher(gcg)
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"xgrammar skipped: {e}")
    rows = []
    print(f"{'calls':>5s} {'bytes':>6s} {'tokens':>6s} {'engine':9s} {'accept ms':>9s} "
          f"{'1st get ms':>10s} {'2nd get ms':>10s} {'captures':>8s} same")
    for n in (5, 30, 120):
        doc = document(n)
        ids = tk.encode(doc, add_special_tokens=False).ids
        seen = {}
        for name, make in engines.items():
            caps, row = run(make, ids)
            seen[name] = caps
            same = "" if len(seen) == 1 else str(caps == seen["xmask"])
            row.update(engine=name, calls=n, bytes=len(doc), tokens=len(ids), captures=len(caps))
            rows.append(row)
            print(f"{n:5d} {len(doc):6d} {len(ids):6d} {name:9s} {row['accept_ms']:9.1f} "
                  f"{row['first_get_ms']:10.1f} {row['again_get_ms']:10.2f} {len(caps):8d} {same}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(rows, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
