#!/usr/bin/env python
"""Eager warm-up of long bounded strings: walks, time, memory (issue 10).

A JSON string with ``maxLength: n`` (64..10,000) is one automaton state per character position
that reads ASCII and calls one shared character rule, returning to the next position.  The
warm-up (``GrammarCompiler(info, precompute=True)``) classifies one state per block of states
no token can tell apart (``mask_cache.token_equivalent_states``) and one (state, return state)
pair per class of pairs (``mask_cache.pair_walks``), so its walks should not grow with ``n``.
Per ``maxLength`` (schema ``{"a": string with that maxLength}``, Llama-3):

* automaton states, top states, state walks, pair walks and all pairs the warm-up fills;
* eager compile wall and process-CPU ms (fastest of ``--reps``), states left pending,
  ``memory_size_bytes``;
* ``token_equivalent_states`` ms (C kernel) and its pure-Python twin's (``--out`` and an older
  build on PYTHONPATH compare before / after: older builds have no twin and walk every pair);
* XGrammar's compile of the same schema in the same run (its compile is its warm-up), if
  installed.

Writes ``bench/results/eager_bounded.json``.  No assertions.

Usage:  python bench/bench_eager_bounded.py [--max-lengths 64,255,1000,3000,10000] [--reps 2]
        [--engines xmask,xgrammar] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402

OUT = bj.REPO / "bench" / "results" / "eager_bounded.json"


def schema(n: int) -> dict:
    return {"type": "object", "properties": {"a": {"type": "string", "maxLength": n}},
            "required": ["a"]}


def timed(fn, reps: int):
    """(result, wall ms, cpu ms) of the fastest of ``reps`` calls."""
    best = None
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        w, c = 1e3 * (time.perf_counter() - w0), 1e3 * (time.process_time() - c0)
        if best is None or w < best[1]:
            best = (out, w, c)
    return best


def xmask_row(data, n: int, reps: int) -> dict:
    import xmask
    from xmask.compiler import mask_cache as mc

    _, info, lazy, _ = bj.xmask_llama3(data)
    eager = xmask.GrammarCompiler(info, cache_enabled=False, precompute=True)
    sch = schema(n)
    compiled, wall, cpu = timed(lambda: eager.compile_json_schema(sch), reps)
    a = compiled._automaton
    tops = mc.top_states(a)
    horizon = int(compiled._vocab_tables.max_token_len) + 1
    rep, kernel_ms, _ = timed(lambda: mc.token_equivalent_states(a, horizon), reps)
    twin = getattr(mc, "token_equivalent_states_reference", None)  # (older builds: none)
    twin_ms = timed(lambda: twin(a, horizon), 1)[1] if twin else float("nan")
    fresh = lazy.compile_json_schema(sch)._mask_cache
    if hasattr(mc, "pair_walks"):
        walks, _, shared = mc.pair_walks(fresh, a, tops, rep, mc.MAX_PAIR_WALKS, mc.MAX_PAIRS)
    else:  # older builds: every pair walked, up to MAX_PAIR_WALKS
        walks = mc.context_pairs(fresh, a, tops, mc.MAX_PAIR_WALKS)[0]
        shared = (walks[:0],)
    return {"states": int(a.n_states), "top_states": int(len(tops)),
            "state_walks": int(len(np.unique(rep[tops]))), "pair_walks": int(len(walks)),
            "pairs_filled": int(len(walks) + len(shared[0])),
            "compile_wall_ms": wall, "compile_cpu_ms": cpu,
            "pending": compiled.cache_summary()["pending"],
            "memory_bytes": int(compiled.memory_size_bytes),
            "equivalence_kernel_ms": kernel_ms, "equivalence_python_twin_ms": twin_ms}


def xgrammar_row(data, n: int, reps: int) -> dict:
    import xgrammar
    from tokenizers import Tokenizer

    path = data / "tokenizers" / "llama3" / "tokenizer.json"
    info = bj.XGrammarEngine(Tokenizer.from_file(str(path)), path, 128256, 128009, 1) \
        .make_tokenizer_info()
    compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    text = json.dumps(schema(n))
    _, wall, cpu = timed(lambda: compiler.compile_json_schema(text, strict_mode=False), reps)
    return {"compile_wall_ms": wall, "compile_cpu_ms": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-lengths", default="64,255,1000,3000,10000")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--engines", default="xmask,xgrammar")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args()
    lengths = [int(x) for x in args.max_lengths.split(",")]
    engines = args.engines.split(",")
    rows = {}
    print(f"{'maxLength':>9} | {'states':>6} {'tops':>6} {'walks':>6} {'pairs':>6} {'filled':>7} | "
          f"{'eager ms':>9} {'cpu ms':>8} {'pend':>4} {'MB':>6} | {'kernel':>7} {'twin':>7} | "
          f"{'xgr ms':>8}")
    for n in lengths:
        row = {}
        if "xmask" in engines:
            row["xmask"] = xmask_row(args.data, n, args.reps)
        if "xgrammar" in engines:
            try:
                row["xgrammar"] = xgrammar_row(args.data, n, args.reps)
            except ImportError:
                pass
        rows[n] = row
        x, g = row.get("xmask", {}), row.get("xgrammar", {})
        print(f"{n:>9} | {x.get('states', 0):>6} {x.get('top_states', 0):>6} "
              f"{x.get('state_walks', 0):>6} {x.get('pair_walks', 0):>6} "
              f"{x.get('pairs_filled', 0):>7} | {x.get('compile_wall_ms', 0):>9.1f} "
              f"{x.get('compile_cpu_ms', 0):>8.1f} {x.get('pending', 0):>4} "
              f"{x.get('memory_bytes', 0) / 1e6:>6.2f} | {x.get('equivalence_kernel_ms', 0):>7.2f} "
              f"{x.get('equivalence_python_twin_ms', 0):>7.1f} | {g.get('compile_wall_ms', 0):>8.1f}",
              flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "eager_bounded", "rows": rows,
                                    "timestamp": time.time()}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
