#!/usr/bin/env python
"""Eager warm-up: classify every state of the MaskBench sample's grammars, max_threads 1 vs 2.

The design card's warm-up mode compiles every grammar fully before serving.  Per schema of the
strided MaskBench sample (as bench_json_schema.py, Llama-3), each mode compiles with a fresh
compiler per max_threads value (cache disabled):

* ``xmask-eager tK``: ``GrammarCompiler(info, max_threads=K, cache_enabled=False,
  precompute=True).compile_json_schema(...)`` (on an xmask without the ``precompute`` option the
  default compiler is eager already, and that is what runs);
* ``xmask-lazy+pre tK`` (only with the lazy cache): the default lazy compile, then
  ``compiled.precompute(max_threads=K)``; compile and precompute are also reported apart;
* ``xgrammar tK``: ``xgrammar.GrammarCompiler(info, max_threads=K, cache_enabled=False)``
  (XGrammar always builds its whole mask cache at compile).

The modes run one after the other per schema, in an order rotated per schema, so load changes
on the shared machine hit them alike.  Reported over the schemas every mode compiled: total,
mean, p50, p90 and max wall time, process CPU time / wall time (> 1: threads ran in parallel),
and the speed-up t1/t2 per engine.  Writes ``bench/results/precompute.json``.  No assertions.

Usage:  python bench/bench_precompute.py [--schemas 50] [--threads 1,2] [--engines xmask,xgrammar]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
import bench_json_schema as bjs  # noqa: E402  -- sample, tokenizer setup, timed compile
from json_schema_report import print_table, ratio  # noqa: E402

DEFAULT_OUT = bj.REPO / "bench" / "results" / "precompute.json"


class Mode:
    """One engine + max_threads setting; compile(schema, text) is what timed_compile calls."""

    def __init__(self, name, engine, compiler, compile_fn, precompute_threads=None):
        self.name, self.engine, self.compiler = name, engine, compiler
        self.compile_fn, self.precompute_threads = compile_fn, precompute_threads
        self.split_ns = None  # (compile, precompute) for the lazy + precompute() mode

    def compile(self, schema, text):
        if self.precompute_threads is None:
            self.compiled = self.compile_fn(self.compiler, schema, text)
            return
        t0 = time.perf_counter_ns()
        compiled = self.compile_fn(self.compiler, schema, text)
        t1 = time.perf_counter_ns()
        compiled.precompute(max_threads=self.precompute_threads)
        self.split_ns = (t1 - t0, time.perf_counter_ns() - t1)
        self.compiled = compiled

    def pending(self):
        """States left unclassified (0 after a full warm-up), where the engine reports it."""
        get = getattr(getattr(self, "compiled", None), "cache_summary", None)
        return get().get("pending") if callable(get) else None


def _xmask_compile(compiler, schema, text):
    return compiler.compile_json_schema(schema, **bjs.XMASK_OPTIONS)


def _xgrammar_compile(compiler, schema, text):
    return compiler.compile_json_schema(text, strict_mode=False, any_whitespace=True)


def build_modes(wanted, threads, tok, tok_path, vocab_size, stop_id, lazy_too):
    modes = []
    if "xmask" in wanted:
        import xmask

        info = bjs.XmaskSchema(tok, tok_path, vocab_size, stop_id, 1).make_tokenizer_info()
        eager = {"precompute": True} if bjs.xmask_has_precompute() else {}
        for k in threads:
            c = xmask.GrammarCompiler(info, max_threads=k, cache_enabled=False, **eager)
            modes.append(Mode(f"xmask-eager t{k}", "xmask-eager", c, _xmask_compile))
        if lazy_too:
            for k in threads:
                c = xmask.GrammarCompiler(info, max_threads=k, cache_enabled=False)
                modes.append(Mode(f"xmask-lazy+pre t{k}", "xmask-lazy+pre", c, _xmask_compile, k))
    if "xgrammar" in wanted:
        import xgrammar

        info = bjs.XGrammarSchema(tok, tok_path, vocab_size, stop_id, 1).make_tokenizer_info()
        for k in threads:
            c = xgrammar.GrammarCompiler(info, max_threads=k, cache_enabled=False)
            modes.append(Mode(f"xgrammar t{k}", "xgrammar", c, _xgrammar_compile))
    return modes


def run(modes, items, limit_s):
    """records[mode][i] = {status, wall_ms, cpu_ms[, compile_ms, precompute_ms, pending]}."""
    recs = {m.name: [] for m in modes}
    t_start = time.perf_counter()
    for i, item in enumerate(items):
        shift = i % len(modes)
        for m in modes[shift:] + modes[:shift]:
            m.split_ns = None
            c0 = time.process_time_ns()
            elapsed, err, _ = bjs.timed_compile(m, item, limit_s)
            r = {"wall_ms": elapsed / 1e6, "cpu_ms": (time.process_time_ns() - c0) / 1e6,
                 "status": "ok" if err is None else type(err).__name__}
            if err is not None:
                r["error"] = bj._err(err)[:200]
            elif m.split_ns:
                r["compile_ms"], r["precompute_ms"] = m.split_ns[0] / 1e6, m.split_ns[1] / 1e6
            if err is None and m.pending() is not None:
                r["pending"] = m.pending()
            m.compiled = None
            recs[m.name].append(r)
        if (i + 1) % 10 == 0 or i + 1 == len(items):
            print(f"  {i + 1}/{len(items)} schemas, {time.perf_counter() - t_start:.0f}s", flush=True)
    return recs


def summarize(modes, recs):
    names = [m.name for m in modes]
    n = len(next(iter(recs.values())))
    common = [i for i in range(n) if all(recs[nm][i]["status"] == "ok" for nm in names)]
    out = {"common_schemas": len(common), "modes": {}}
    for m in modes:
        rs = [recs[m.name][i] for i in common]
        wall = sum(r["wall_ms"] for r in rs)
        s = out["modes"][m.name] = {
            "engine": m.engine, "ok": sum(r["status"] == "ok" for r in recs[m.name]),
            "total_s": wall / 1e3, "wall_ms": bjs.dist_stats([r["wall_ms"] for r in rs]),
            "cpu_over_wall": sum(r["cpu_ms"] for r in rs) / wall if wall else None,
            "pending_after": sum(r.get("pending") or 0 for r in rs),
        }
        if rs and "compile_ms" in rs[0]:
            s["compile_ms"] = bjs.dist_stats([r["compile_ms"] for r in rs])
            s["precompute_ms"] = bjs.dist_stats([r["precompute_ms"] for r in rs])
    return out


def print_report(summ, modes, threads):
    names = [m.name for m in modes]
    g = summ["modes"]
    print(f"\nEAGER WARM-UP, the {summ['common_schemas']} schemas every mode compiled (wall time; "
          "cpu/wall > 1: threads ran in parallel)")
    rows = [["compiled (own)", *[str(g[n]["ok"]) for n in names]],
            ["total (s)", *[bj._fmt(g[n]["total_s"]) for n in names]]]
    rows += [[f"{st} (ms)", *[bj._fmt(g[n]["wall_ms"][st]) for n in names]] for st in ("mean", "p50", "p90", "max")]
    rows.append(["cpu / wall", *[f"{g[n]['cpu_over_wall']:.2f}" if g[n]["cpu_over_wall"] else "-" for n in names]])
    rows.append(["states left pending", *[str(g[n]["pending_after"]) for n in names]])
    if any("compile_ms" in g[n] for n in names):
        for key in ("compile_ms", "precompute_ms"):
            for st in ("p50", "p90"):
                rows.append([f"  {key[:-3]} {st} (ms)",
                             *[bj._fmt(g[n][key][st]) if key in g[n] else "" for n in names]])
    print_table(["metric", *names], rows)
    if len(threads) >= 2:
        lo, hi = threads[0], threads[-1]
        print(f"\nspeed-up t{lo}/t{hi} (> 1: more threads faster), same schemas")
        engines = sorted({m.engine for m in modes}, key=[m.engine for m in modes].index)
        srows = []
        for e in engines:
            a, b = g.get(f"{e} t{lo}"), g.get(f"{e} t{hi}")
            if a and b:
                srows.append([e, *[ratio(a["wall_ms"][st] if st != "total" else a["total_s"],
                                             b["wall_ms"][st] if st != "total" else b["total_s"])
                                   for st in ("total", "p50", "p90")]])
        print_table(["engine", "total", "p50", "p90"], srows)
        if "xmask-eager t1" in g and "xgrammar t1" in g:
            print("\nxmask-eager / xgrammar (< 1: xmask faster): " + ", ".join(
                f"t{k} total {ratio(g[f'xmask-eager t{k}']['total_s'], g[f'xgrammar t{k}']['total_s'])}"
                for k in threads if f"xgrammar t{k}" in g and f"xmask-eager t{k}" in g))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=50, help="MaskBench sample size (strided; 0: all)")
    ap.add_argument("--threads", default="1,2", help="max_threads values, comma-separated (default 1,2)")
    ap.add_argument("--engines", default="xmask,xgrammar")
    ap.add_argument("--no-lazy", action="store_true", help="skip the lazy compile + precompute() modes")
    ap.add_argument("--compile-timeout", type=float, default=60.0)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    threads = [int(x) for x in args.threads.split(",") if x.strip()]
    wanted = {e.strip() for e in args.engines.split(",")}
    has_pre = bjs.xmask_has_precompute()

    from tokenizers import Tokenizer

    tok_path = args.data / "tokenizers" / "llama3" / "tokenizer.json"
    tok = Tokenizer.from_file(str(tok_path))
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    stop_id = bjs.stop_token_id(tok, tok_path)
    items = bjs.load_schemas(bjs.sample_files(args.data / "maskbench", args.schemas), tok, 0)
    modes = build_modes(wanted, threads, tok, tok_path, vocab_size, stop_id, bool(has_pre) and not args.no_lazy)
    warm = {"schema": bjs.WARMUP_SCHEMA, "text": json.dumps(bjs.WARMUP_SCHEMA)}
    for m in modes:
        bjs.timed_compile(m, warm, 0)
    print(f"schemas={len(items)} modes={[m.name for m in modes]} xmask precompute option: {has_pre}; "
          f"xmask git {bjs.xmask_git()}; cores={os.cpu_count()} (shared machine: expect noise)")
    recs = run(modes, items, args.compile_timeout)
    summ = summarize(modes, recs)
    print_report(summ, modes, threads)
    bjs.write_json(args.out, {
        "benchmark": "bench_precompute",
        "options": {"schemas": args.schemas, "threads": threads, "modes": [m.name for m in modes],
                    "xmask_has_precompute": has_pre, "compile_timeout_s": args.compile_timeout},
        "hardware": {"platform": platform.platform(), "cpu_model": bj._cpu_model(), "cores": os.cpu_count()},
        "software": {"python": platform.python_version(), "xmask_git": bjs.xmask_git(),
                     **{d: bj._version(d) for d in ("xmask", "xgrammar")}},
        "summary": summ,
        "schemas": [{"file": it["file"], **{nm: recs[nm][i] for nm in recs}} for i, it in enumerate(items)],
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
