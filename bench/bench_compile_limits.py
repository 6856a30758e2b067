#!/usr/bin/env python
"""Compile cost of the JSON-schema shapes the issue bounds, on a real tokenizer (Llama-3).

Each case is compiled cold (fresh compiler, cache disabled) ``--reps`` times; the script prints
time (first, median), automaton states, cached states, uncertain tokens, cache memory and peak
RSS growth, and a mask-time figure (mean ``fill_next_token_bitmask`` over a valid instance).  No
assertions on time: figures go to stdout and ``bench/results/bench_compile_limits.json``.

Usage:  python bench/bench_compile_limits.py [--data PATH] [--reps 2] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import time

import xmask

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_DATA = pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "bench" / "results" / "bench_compile_limits.json"


def _nested(depth: int) -> dict:
    s = {"type": "integer"}
    for _ in range(depth):
        s = {"type": "array", "items": s}
    return s


# name -> (schema, a valid instance text)
CASES = {
    "maxLength_255": ({"type": "string", "maxLength": 255}, json.dumps("y" * 255)),
    "maxLength_1000": ({"type": "string", "maxLength": 1000}, json.dumps("y" * 1000)),
    "maxLength_65535": ({"type": "string", "maxLength": 65535}, json.dumps("z" * 300)),
    "minmaxLength_100_1000": ({"type": "string", "minLength": 100, "maxLength": 1000},
                              json.dumps("é" * 150)),
    "pattern_a{0,3000}": ({"type": "string", "pattern": "^a{0,3000}$"}, json.dumps("a" * 3000)),
    "pattern_[a-z]{0,3000}": ({"type": "string", "pattern": "^[a-z]{0,3000}$"},
                              json.dumps("abc" * 1000)),
    "maxItems_3000": ({"type": "array", "items": {"type": "integer"}, "maxItems": 3000},
                      json.dumps(list(range(500)))),
    "nesting_1000": (_nested(1000), "[" * 1000 + "1" + "]" * 1000),
    "enum_10000": ({"enum": [f"value_{i}" for i in range(10_000)]}, json.dumps("value_9999")),
    "enum_10000_mixed": ({"enum": [i * 7 for i in range(5000)] + [f"k{i}" for i in range(5000)]},
                         json.dumps("k4999")),
    "format_hostname": ({"type": "string", "format": "hostname"}, json.dumps("a.example.com")),
    "format_date-time": ({"type": "string", "format": "date-time"},
                         json.dumps("2024-02-29T12:30:00.123Z")),
    "format_email": ({"type": "string", "format": "email"}, json.dumps("joe.bloggs@example.com")),
    "integer_range": ({"type": "integer", "minimum": -12345, "maximum": 987654321}, "42"),
}


_HAS_PRECOMPUTE = 'precompute' in xmask.GrammarCompiler.__init__.__code__.co_varnames  # eager: the full cost


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(info, hf, name, schema, text, reps):
    times, compiled = [], None
    rss0 = _rss_mib()
    for _ in range(reps):
        comp = xmask.GrammarCompiler(info, max_threads=1, cache_enabled=False,
                                    **({'precompute': True} if _HAS_PRECOMPUTE else {}))
        t = time.perf_counter()
        compiled = comp.compile_json_schema(schema, strict_mode=False)
        times.append(time.perf_counter() - t)
    a = compiled._automaton
    stats = compiled.cache_stats()
    ids = hf.encode(text, add_special_tokens=False).ids
    m = xmask.GrammarMatcher(compiled)
    bm = xmask.allocate_token_bitmask(1, info.vocab_size)
    fills = []
    for tid in ids:
        t = time.perf_counter_ns()
        m.fill_next_token_bitmask(bm)
        fills.append(time.perf_counter_ns() - t)
        if not m.accept_token(tid):
            raise AssertionError(f"{name}: valid instance rejected")
    return {
        "case": name,
        "compile_first_s": round(times[0], 3),
        "compile_median_s": round(statistics.median(times), 3),
        "states": int(a.n_states),
        "cached_states": len(stats),
        "uncertain_total": sum(r.uncertain for r in stats),
        "cache_kib": round(compiled.memory_size_bytes / 1024, 1),
        "peak_rss_growth_mib": round(_rss_mib() - rss0, 1),
        "mask_mean_us": round(statistics.mean(fills) / 1e3, 1) if fills else None,
        "tokens": len(ids),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=pathlib.Path, default=DEFAULT_DATA)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    import tokenizers

    tok = args.data / "tokenizers" / "llama3"
    info = xmask.TokenizerInfo.from_huggingface(tok)
    hf = tokenizers.Tokenizer.from_file(str(tok / "tokenizer.json"))
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    rows = []
    cols = ("compile_first_s", "compile_median_s", "states", "cached_states", "uncertain_total",
            "cache_kib", "peak_rss_growth_mib", "mask_mean_us")
    print("case".ljust(24) + "".join(c.rjust(20) for c in cols), flush=True)
    for name in names:
        schema, text = CASES[name]
        row = run_case(info, hf, name, schema, text, args.reps)
        rows.append(row)
        print(name.ljust(24) + "".join(str(row[c]).rjust(20) for c in cols), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"tokenizer": "llama3", "vocab_size": info.vocab_size,
                                    "rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
