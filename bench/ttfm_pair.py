#!/usr/bin/env python
"""Time to first mask, xmask vs llguidance alone: per schema, in CPU time, fastest of N.

``bench_json_schema.py`` runs all engines one after the other on each schema. Each engine then
finds caches and allocator arenas in the state the others left, which inflates every engine's
times by about 1.4x here. This script compares only xmask and llguidance. Each repetition
times xmask's compile + matcher + first fill and then llguidance's grammar + matcher + first
fill, in thread CPU time (``time.thread_time``: the machine's other load barely moves it).
The script keeps each engine's fastest repetition. It uses the same MaskBench sample and
options as ``bench_json_schema.py``. It prints the percentiles of both engines over the
schemas both compiled, their ratios and the slowest schemas, and writes
``bench/results/ttfm_pair.json``. No assertions.  ``--phases`` also times xmask's front end
(schema -> Grammar) and compares it alone with llguidance's whole time to first mask: the
bound a free automaton build (a lazy one, say) would leave.

Usage:  python bench/ttfm_pair.py [--schemas 100] [--reps 2] [--phases] [--files NAME,NAME...]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402
from profile_ttfm import llguidance_first_mask, time_front_end  # noqa: E402

OUT = bj.REPO / "bench" / "results" / "ttfm_pair.json"
clock = time.thread_time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--xmask-threads", type=int, default=None,
                    help="xmask's GrammarCompiler max_threads (default: the compiler's).  CPU "
                         "time counts the compiling thread only: a large grammar's rule DFAs "
                         "partly built on a helper thread are not counted; 1 counts all")
    ap.add_argument("--phases", action="store_true",
                    help="also time xmask's front end (schema -> Grammar) and report it alone against "
                         "llguidance's whole time to first mask: what an automaton built for free would leave")
    ap.add_argument("--files", default="",
                    help="comma-separated MaskBench file names (without .json) instead of the sample")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    xmask, info, compiler, bitmask = bj.xmask_llama3(args.data)
    if args.xmask_threads is not None:
        compiler = xmask.GrammarCompiler(info, cache_enabled=False, max_threads=args.xmask_threads)
    llguidance_ttfm = llguidance_first_mask(args.data)
    front: dict = {}
    if args.phases:
        time_front_end(front, "t")
    compiler.compile_json_schema({"type": "object"})  # imports and first-use memos
    rows = []
    files = ([args.data / "maskbench" / f"{name}.json" for name in args.files.split(",")]
             if args.files else sample_files(args.data / "maskbench", args.schemas))
    for f in files:
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        bx = bl = bf = None
        for _ in range(args.reps):
            try:
                front.clear()
                t0 = clock()
                c = compiler.compile_json_schema(schema, strict_mode=False, any_whitespace=True)
                xmask.GrammarMatcher(c).fill_next_token_bitmask(bitmask)
                t1 = clock()
            except xmask.XmaskError:
                bx = None
                break
            if bx is None or t1 - t0 < bx:
                bx, bf = t1 - t0, front.get("t", 0.0)
            t0 = clock()
            m = llguidance_ttfm(schema)
            t1 = clock()
            if m.is_error():
                bl = None
                break
            bl = t1 - t0 if bl is None else min(bl, t1 - t0)
        if bx is not None and bl is not None:
            rows.append({"file": f.name, "xmask_ms": bx * 1e3, "llguidance_ms": bl * 1e3})
            if args.phases:
                rows[-1]["xmask_front_ms"] = bf * 1e3
    x = np.array([r["xmask_ms"] for r in rows])
    lg = np.array([r["llguidance_ms"] for r in rows])
    print(f"{len(rows)} schemas compiled by both; TTFM, CPU ms, fastest of {args.reps}")
    summary = {}
    for p in (50, 75, 90, 99):
        a, b = float(np.percentile(x, p)), float(np.percentile(lg, p))
        summary[f"p{p}"] = {"xmask": a, "llguidance": b, "ratio": a / b}
        print(f"p{p}: xmask {a:.2f}  llguidance {b:.2f}  xmask/llguidance {a / b:.2f}x")
    print(f"sum: xmask {x.sum():.1f}  llguidance {lg.sum():.1f}")
    if args.phases:
        fr = np.array([r["xmask_front_ms"] for r in rows])
        summary["front_end_alone"] = {}
        for p in (50, 75, 90):
            a, b = float(np.percentile(fr, p)), float(np.percentile(lg, p))
            summary["front_end_alone"][f"p{p}"] = {"xmask_front": a, "llguidance": b, "ratio": a / b}
            print(f"front end alone p{p}: {a:.2f} ms, {a / b:.2f}x llguidance's whole TTFM")
        print(f"front end share of xmask's summed TTFM: {fr.sum() / x.sum() * 100:.1f}%")
    for r in sorted(rows, key=lambda r: -r["xmask_ms"])[:10]:
        print(f"  {r['file']:<50} {r['xmask_ms']:8.2f} {r['llguidance_ms']:8.2f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
