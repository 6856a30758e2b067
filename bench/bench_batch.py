#!/usr/bin/env python
"""Batch mask filling and the GIL: xmask vs XGrammar in one run (Llama-3 tokenizer).

1. Batch fill.  ``BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(matchers, bitmask)``
   for batches of 1, 16, 64, 256 matchers, threads 1..cores, on the built-in JSON grammar and a
   few MaskBench schemas (``compile_json_schema(schema, strict_mode=False, any_whitespace=True)``).
   Matcher i is advanced to a varied position by accepting a prefix of a real document (MaskBench
   valid instances, ``json.dumps`` + ``tokenizer.encode`` without special tokens); both engines
   get exactly the same prefixes.  Median wall time per batch call, best of 3 interleaved rounds
   per engine (the machine may be shared).
2. GIL stall.  A second Python thread spins (``x += 1``) while the main thread fills 16 rows one
   ``fill_next_token_bitmask`` call at a time, and then as one batch call: a call that releases
   and re-takes the GIL waits for the spinning thread's switch interval (5 ms).  Per-call median
   and p90, with and without the busy thread.
3. fork() cost at the start, middle and end of a document.
4. Calibration of xmask's GIL threshold: fill time against the kernel's work estimate
   (``_debug_fill_cost``, ~ uncertain tokens to check) over every position of every document;
   prints ns per unit, which _fill.pyx uses to justify NOGIL_MIN_COST.

Nothing here asserts on timings.  Writes bench/results/batch.json.

Usage:  python bench/bench_batch.py [--data PATH] [--sizes 1,16,64,256] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import threading
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import xmask  # noqa: E402

SCHEMAS = [
    "Github_medium---o17482.json",
    "Kubernetes---kb_1046_Normalized.json",
    "JsonSchemaStore---docker-seq.schema.json",
    "Github_hard---o41096.json",
]
DOCS = [
    '{"name": "caf\u00e9 \u4f60\u597d", "list": [1, -2.5e3, true, null, {"x": "a\\"b\\n"}], "e": {}}',
    '[{"id": 17, "tags": ["a", "b"], "ok": false}, [], [[0.5]], "end"]',
]


def _xgr_version():
    from importlib.metadata import version

    return version("xgrammar")


def data_dir(arg):
    if arg:
        return pathlib.Path(arg)
    return pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))


def timed(fn, min_total=0.25, max_reps=2000):
    """Median seconds of fn() over repetitions adding up to about min_total seconds."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    reps = int(min(max_reps, max(5, min_total / one)))
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


class Engines:
    """Tokenizer infos and compilers of both engines on the Llama-3 tokenizer."""

    def __init__(self, data):
        import tokenizers
        import xgrammar
        from transformers import PreTrainedTokenizerFast

        path = str(data / "tokenizers" / "llama3" / "tokenizer.json")
        self.tokenizer = tokenizers.Tokenizer.from_file(path)
        self.info = xmask.TokenizerInfo.from_huggingface(path)
        self.compiler = xmask.GrammarCompiler(self.info)
        self.xgr = xgrammar
        hf = PreTrainedTokenizerFast(tokenizer_file=path)
        self.xinfo = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=self.info.vocab_size)
        self.xcompiler = xgrammar.GrammarCompiler(self.xinfo)
        self.vocab_size = self.info.vocab_size

    def encode(self, text):
        return self.tokenizer.encode(text, add_special_tokens=False).ids


def grammar_cases(eng, data):
    """[(name, xmask compiled, xgrammar compiled, [token ids of a document, ...])]."""
    cases = []
    all_docs = [eng.encode(d) for d in DOCS]
    for name in SCHEMAS:
        entry = json.loads((data / "maskbench" / name).read_text())
        docs = [eng.encode(json.dumps(t["data"])) for t in entry["tests"] if t["valid"]]
        opts = dict(strict_mode=False, any_whitespace=True)
        cases.append((name.split("---")[0] + "/" + name.split("---")[1][:18],
                      eng.compiler.compile_json_schema(entry["schema"], **opts),
                      eng.xcompiler.compile_json_schema(json.dumps(entry["schema"]), **opts),
                      docs))
        all_docs += [d for d, t in zip(docs, entry["tests"]) if isinstance(t["data"], (dict, list))]
    cases.insert(0, ("builtin JSON", eng.compiler.compile_builtin_json_grammar(),
                     eng.xcompiler.compile_builtin_json_grammar(), all_docs))
    return cases


def positions(docs, n):
    """n (doc, prefix length) pairs spread over the documents, never at the very end."""
    out = []
    for i in range(n):
        ids = docs[i % len(docs)]
        out.append((ids, (i * 7919 + 13) % len(ids)))
    return out


def make_matchers(eng, compiled, xcompiled, pos):
    ms, xs = [], []
    for ids, k in pos:
        m, x = xmask.GrammarMatcher(compiled), eng.xgr.GrammarMatcher(xcompiled)
        for t in ids[:k]:
            if not (m.accept_token(t) and x.accept_token(t)):
                raise RuntimeError("an engine rejected a valid document token")
        ms.append(m)
        xs.append(x)
    return ms, xs


def bench_batch(eng, cases, sizes, threads):
    rows = []
    for name, compiled, xcompiled, docs in cases:
        for n in sizes:
            ms, xs = make_matchers(eng, compiled, xcompiled, positions(docs, n))
            bm = xmask.allocate_token_bitmask(n, eng.vocab_size)
            xbm = eng.xgr.allocate_token_bitmask(n, eng.vocab_size)
            work = sum(m._debug_fill_cost() for m in ms)
            for nt in threads:
                b, xb = xmask.BatchGrammarMatcher(nt), eng.xgr.BatchGrammarMatcher(nt)
                # Interleaved rounds, best median of each engine: the machine is shared, and a
                # round where another process takes a core says nothing about either engine.
                t_x = t_g = float("inf")
                for _ in range(3):
                    t_x = min(t_x, timed(lambda: b.batch_fill_next_token_bitmask(ms, bm), 0.1))
                    t_g = min(t_g, timed(lambda: xb.batch_fill_next_token_bitmask(xs, xbm), 0.1))
                rows.append({"grammar": name, "batch": n, "threads": nt, "xmask_work": work,
                             "xmask_us": t_x * 1e6, "xgrammar_us": t_g * 1e6,
                             "xgrammar_over_xmask": t_g / t_x})
                print(f"  {name:34s} batch {n:4d} threads {nt}: xmask {t_x * 1e6:9.1f} us   "
                      f"xgrammar {t_g * 1e6:9.1f} us   ratio {t_g / t_x:6.2f}x   "
                      f"(xmask work {work}, {t_x * 1e9 / max(work, 1):.1f} ns/unit)", flush=True)
    return rows


class Busy:
    """A Python thread spinning on bytecode (holds the GIL except at switch intervals)."""

    def __enter__(self):
        self.stop = False

        def spin():
            x = 0
            while not self.stop:
                x += 1

        self.thread = threading.Thread(target=spin, daemon=True)
        self.thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()


def per_call(fn, calls):
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    out.sort()
    return statistics.median(out) * 1e6, out[int(0.9 * (len(out) - 1))] * 1e6


def bench_gil(eng, cases, rows=16, calls=60, only_xmask=False):
    name, compiled, xcompiled, docs = cases[0]
    ms, xs = make_matchers(eng, compiled, xcompiled, positions(docs, rows))
    bm = xmask.allocate_token_bitmask(rows, eng.vocab_size)
    xbm = eng.xgr.allocate_token_bitmask(rows, eng.vocab_size)
    b, xb = xmask.BatchGrammarMatcher(1), eng.xgr.BatchGrammarMatcher(1)
    state = {"i": 0}

    def one(matchers, bitmask):
        def go():
            i = state["i"] = (state["i"] + 1) % rows
            matchers[i].fill_next_token_bitmask(bitmask, i)
        return go

    big_ms, big_xs = make_matchers(eng, compiled, xcompiled, positions(docs, 256))
    big_bm = xmask.allocate_token_bitmask(256, eng.vocab_size)
    big_xbm = eng.xgr.allocate_token_bitmask(256, eng.vocab_size)
    b2, xb2 = xmask.BatchGrammarMatcher(2), eng.xgr.BatchGrammarMatcher(2)
    tests = [
        ("xmask single fill (one row)", one(ms, bm)),
        ("xgrammar single fill (one row)", one(xs, xbm)),
        (f"xmask batch fill ({rows} rows)", lambda: b.batch_fill_next_token_bitmask(ms, bm)),
        (f"xgrammar batch fill ({rows} rows)", lambda: xb.batch_fill_next_token_bitmask(xs, xbm)),
        ("xmask batch fill (256 rows, 2 thr)",
         lambda: b2.batch_fill_next_token_bitmask(big_ms, big_bm)),
        ("xgrammar batch fill (256 rows, 2 thr)",
         lambda: xb2.batch_fill_next_token_bitmask(big_xs, big_xbm)),
    ]
    if only_xmask:
        tests = [t for t in tests if t[0].startswith("xmask")]
    out = []
    for label, fn in tests:
        quiet = per_call(fn, calls)
        with Busy():
            busy = per_call(fn, calls)
        out.append({"call": label, "idle_median_us": quiet[0], "idle_p90_us": quiet[1],
                    "busy_median_us": busy[0], "busy_p90_us": busy[1]})
        print(f"  {label:34s} idle {quiet[0]:8.1f} / {quiet[1]:8.1f} us   "
              f"busy thread {busy[0]:8.1f} / {busy[1]:8.1f} us  (median / p90)", flush=True)
    return out


def gil_always_release(args):
    import subprocess

    env = dict(os.environ, XMASK_NOGIL_MIN_COST="0")
    cmd = [sys.executable, __file__, "--gil-only"] + (["--data", args.data] if args.data else [])
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in res.stdout.splitlines()]
    for ln in lines:
        if not ln.startswith("GIL-JSON "):
            print(ln)
    found = [ln for ln in lines if ln.startswith("GIL-JSON ")]
    if not found:
        print("  (subprocess failed)", res.stderr[-2000:])
        return []
    return json.loads(found[0][len("GIL-JSON "):])


def bench_fork(eng, cases):
    """GrammarMatcher.fork() at the start, middle and end of each grammar's longest document."""
    out = []
    for name, compiled, xcompiled, docs in cases:
        ids = max(docs, key=len)
        for k in (0, len(ids) // 2, len(ids)):
            (m,), (x,) = make_matchers(eng, compiled, xcompiled, [(ids, k)])
            t_x, t_g = timed(m.fork, 0.05), timed(x.fork, 0.05)
            out.append({"grammar": name, "tokens_accepted": k, "xmask_us": t_x * 1e6,
                        "xgrammar_us": t_g * 1e6})
            print(f"  {name:34s} after {k:4d} tokens: xmask {t_x * 1e6:6.1f} us   "
                  f"xgrammar {t_g * 1e6:6.1f} us")
    return out


def calibrate(eng, cases):
    """Fill time per unit of the work estimate, over every position of every document."""
    bm = np.zeros((1, (eng.vocab_size + 31) // 32), np.int32)
    pts = []
    for name, compiled, _x, docs in cases:
        for ids in docs[:6]:
            m = xmask.GrammarMatcher(compiled)
            for t in ids:
                cost = m._debug_fill_cost()
                pts.append((cost, timed(lambda: m.fill_next_token_bitmask(bm), 0.002, 50)))
                assert m.accept_token(t)
    pts.sort()
    out = []
    for lo, hi in [(0, 100), (100, 500), (500, 2000), (2000, 10**9)]:
        sel = [(c, t) for c, t in pts if lo <= c < hi]
        if not sel:
            continue
        med_t = statistics.median(t for _, t in sel) * 1e6
        ns_unit = statistics.median(t * 1e9 / c for c, t in sel if c > 0)
        out.append({"cost_from": lo, "cost_to": hi, "fills": len(sel),
                    "median_fill_us": med_t, "median_ns_per_unit": ns_unit})
        print(f"  work {lo:5d}..{hi if hi < 10**9 else 'inf':>5}: {len(sel):5d} fills, median "
              f"{med_t:7.1f} us, {ns_unit:6.1f} ns per unit (incl. ~3 us call overhead)")
    big = [c for c, _ in pts]
    print(f"  largest work estimate seen: {max(big)}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data")
    ap.add_argument("--sizes", default="1,16,64,256")
    ap.add_argument("--threads", default=",".join(str(i) for i in range(1, (os.cpu_count() or 1) + 1)))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "batch.json"))
    ap.add_argument("--gil-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    data = data_dir(args.data)
    eng = Engines(data)
    cases = grammar_cases(eng, data)
    if args.gil_only:  # the subprocess of section 2 (env XMASK_NOGIL_MIN_COST=0)
        print("GIL-JSON " + json.dumps(bench_gil(eng, cases, only_xmask=True)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    threads = [int(s) for s in args.threads.split(",")]
    print(f"xmask {xmask.__version__}, xgrammar {_xgr_version()}, {os.cpu_count()} cores")
    print("1. batch fill, median per call")
    batch = bench_batch(eng, cases, sizes, threads)
    print("2. GIL stall: per call with another Python thread spinning")
    gil = bench_gil(eng, cases)
    print("   the same, xmask built to always release the GIL (XMASK_NOGIL_MIN_COST=0), i.e.")
    print("   the behaviour before this change:")
    gil_release = gil_always_release(args)
    for r in gil_release:
        r["call"] += " [always release]"
    gil += gil_release
    print("3. fork()")
    fork = bench_fork(eng, cases)
    print("4. xmask fill time vs work estimate (GIL threshold calibration)")
    cal = calibrate(eng, cases)
    scaling = []
    for r in batch:
        if r["threads"] != 1:
            base = next(x for x in batch if x["grammar"] == r["grammar"] and x["batch"] == r["batch"]
                        and x["threads"] == 1)
            scaling.append({"grammar": r["grammar"], "batch": r["batch"], "threads": r["threads"],
                            "xmask_speedup": base["xmask_us"] / r["xmask_us"],
                            "xgrammar_speedup": base["xgrammar_us"] / r["xgrammar_us"]})
    print("thread scaling (time with 1 thread / time with N threads)")
    for s in scaling:
        print(f"  {s['grammar']:34s} batch {s['batch']:4d} threads {s['threads']}: "
              f"xmask {s['xmask_speedup']:5.2f}x   xgrammar {s['xgrammar_speedup']:5.2f}x")
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cores": os.cpu_count(), "batch": batch, "scaling": scaling,
                               "gil": gil, "fork": fork, "calibration": cal}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
