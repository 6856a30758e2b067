#!/usr/bin/env python
"""The costliest single matcher calls under the default ``RuntimeLimits`` (README, runtime limits).

A call is bounded by ``max_work_per_call`` units plus one byte step (the caps are checked after
each step), and one step by the tops it starts from (<= ``max_stack_tops``) times the frames it
opens and closes (<= the depth: ``max_stack_depth``, else the process-wide recursion bound).
This measures, on Llama-3, calls built to hit each term:

* accept, ``accept_string`` of one 4 KiB window (its work budget): a JSON string (cheap bytes),
  the ``ab`` family (``root ::= "a" root | "a" root "b" | ""``: O(depth) closure per byte, even
  merged) until the work cap stops it, a "wide" grammar (n distinct rules live at once: n tops
  per byte) just under the tops cap until the work cap stops it, and one over the tops cap (the
  single step that crosses it);
* one step at the depth bound: one 'a' of ``ab`` 9,000 frames deep;
* fills: an exact fill near the recursion bound (every token checked on the real stack), a warm
  fill with 2,000 tops (2,000 cache rows ORed), ``ab`` 9,000 deep.

For each: wall time (median of --reps), work units (``GrammarMatcher._debug_call_work``) and
whether a cap stopped it.  Nothing here asserts on timings.  JSON goes to
bench/results/bench_worst_call.json.

Usage:  python bench/bench_worst_call.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import time

import numpy as np

import xmask

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "bench" / "results" / "bench_worst_call.json"
AB = 'root ::= "a" root | "a" root "b" | ""'


def wide(n):
    """n distinct rules live after the first byte, each reading any character: n stack tops
    per byte (the graph-structured stack merges only equal states)."""
    return ("root ::= . (" + " | ".join(f"w{i}" for i in range(n)) + ")\n"
            + "\n".join(f'w{i} ::= . w{i} | "<{i}>"' for i in range(n)))


def timed(setup, call, reps):
    """Median wall time of call(m) on fresh m = setup(), and the last run's (result, m)."""
    times = []
    for _ in range(reps):
        m = setup()
        t0 = time.perf_counter_ns()
        r = call(m)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times), r, m


def row(name, ns, m, result):
    err = m.limit_error
    return {"case": name, "ms": ns / 1e6, "units": m._debug_call_work(),
            "stopped_by": err.limit if err is not None else None, "result": result,
            "tops": len(m._debug_top_states())}


def deep_ab(cg, depth):
    """An ab matcher `depth` frames deep, built in calls below the work cap."""
    m = xmask.GrammarMatcher(cg)
    while m.num_accepted_tokens * 100 < depth:
        assert m.accept_string("a" * 100), m.limit_error
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    info = xmask.TokenizerInfo.from_huggingface(
        str(DATA / "tokenizers" / args.tokenizer / "tokenizer.json"))
    c = xmask.GrammarCompiler(info)
    bm = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
    json_g = c.compile_builtin_json_grammar()
    ab = c.compile_grammar(AB)
    lim = xmask.RuntimeLimits()
    under = c.compile_grammar(wide(lim.max_stack_tops - 10))
    over = c.compile_grammar(wide(lim.max_stack_tops + 10))
    rows = []

    def accept(name, cg, prefix, text):
        def setup():
            m = xmask.GrammarMatcher(cg)
            assert m.accept_string(prefix)
            return m
        ns, r, m = timed(setup, lambda m: m.accept_string(text), args.reps)
        rows.append(row(name, ns, m, r))

    accept("accept: JSON string, 4 KiB", json_g, '"', "x" * 4095)
    accept("accept: ab, 4 KiB of 'a'", ab, "", "a" * 4095)
    accept(f"accept: wide {lim.max_stack_tops - 10} tops, 4 KiB", under, "", "x" * 4095)
    accept(f"accept: wide {lim.max_stack_tops + 10} tops, 1 byte", over, "", "x")
    a_id = info.decoded_vocab.index(b"a")
    ns, r, m = timed(lambda: deep_ab(ab, 9000), lambda m: m.accept_token(a_id), args.reps)
    rows.append(row("accept: one 'a' of ab at depth 9,000", ns, m, r))

    def fill(name, setup):
        ns, r, m = timed(setup, lambda m: m.fill_next_token_bitmask(bm), args.reps)
        rows.append(row(name, ns, m, r))

    def near_bound():
        m = xmask.GrammarMatcher(json_g)
        for t in [info.decoded_vocab.index(b"[")] * 4:
            assert m.accept_token(t)
        return m

    with xmask.max_recursion_depth(12):
        near_bound().fill_next_token_bitmask(bm)  # classify outside the timing
        fill("fill: exact, near the recursion bound", near_bound)
    wide2k = c.compile_grammar(wide(2000))

    def wide_setup():
        m = xmask.GrammarMatcher(wide2k)
        assert m.accept_string("xy")
        return m

    t0 = time.perf_counter_ns()
    wide_setup().fill_next_token_bitmask(bm)  # the first fill classifies the 2,000 states
    cold_ms = (time.perf_counter_ns() - t0) / 1e6
    fill("fill: wide, 2,000 tops (warm cache)", wide_setup)
    deep_ab(ab, 100).fill_next_token_bitmask(bm)
    fill("fill: ab at depth 9,000", lambda: deep_ab(ab, 9000))

    print(f"{'case':44} {'ms':>9} {'units':>10} {'tops':>6} {'stopped by':>18}")
    for r in rows:
        print(f"{r['case']:44} {r['ms']:9.2f} {r['units']:10d} {r['tops']:6d} "
              f"{r['stopped_by'] or '-':>18}")
    print(f"(first fill of the wide 2,000-rule grammar, classifying its 2,000 states lazily: "
          f"{cold_ms:.0f} ms)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "tokenizer": args.tokenizer, "limits": lim.__dict__, "rows": rows,
        "wide_2000_cold_fill_ms": cold_ms,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
    }, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
