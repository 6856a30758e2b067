#!/usr/bin/env python
"""Time to first mask of two xmask trees, schema by schema in lockstep (A/B on a noisy machine).

On this shared 2-core machine, two runs of ``profile_ttfm.py`` moved 20-40% apart with no change
in between, so comparing two separate runs cannot show a 5-10% change.  This script starts one
worker process per tree (``PYTHONPATH=<tree>``) and hands them the schemas of the
``bench_json_schema.py`` sample one at a time, alternately (A then B on even schemas, B then A
on odd ones), so a load change hits both trees alike.  Each worker compiles each schema once,
cold as in the bench (``strict_mode=False, any_whitespace=True``, compile cache off, Llama-3),
creates a matcher and fills the first mask, and reports the thread CPU time (``--clock wall``:
the elapsed time, which counts work on helper threads) of that and of the
front end (schema -> grammar IR) alone.  ``--rounds N`` repeats the whole sample in fresh
workers and keeps, per schema, the fastest of the N cold runs of each tree; the two workers of
a round are started in turn (the one started second measured 4-6% faster in an A/A run), so N
should be even.

Prints p50 / p75 / p90 / p99 / sum of both trees and their ratio, the median per-schema ratio,
and the schemas that moved most.  Writes ``bench/results/ttfm_ab.json``.  No assertions.

Usage:  python bench/ttfm_ab.py --a /path/to/base/tree --b /path/to/new/tree [--schemas 100] [--sweep-mb 64]
        [--rounds 4] [--clock wall] [--threads-a 1 --threads-b 2]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402

# The worker: reads a schema file path per line, answers one JSON line per schema.
WORKER = r"""
import json, pathlib, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[3])  # the tree first: python -c also puts the current folder on the path
import bench_json as bj
import xmask
from xmask.grammar_api import Grammar
clock = time.perf_counter if sys.argv[4] == "wall" else time.thread_time
_, info, compiler, bitmask = bj.xmask_llama3(pathlib.Path(sys.argv[2]))
if sys.argv[5] != "default":
    compiler = xmask.GrammarCompiler(info, cache_enabled=False, max_threads=int(sys.argv[5]))
compiler.compile_json_schema({"type": "object"})  # imports and first-use memos
front = Grammar.from_json_schema
spent = [0.0]
def timed(*a, **k):
    t = clock()
    try:
        return front(*a, **k)
    finally:
        spent[0] += clock() - t
Grammar.from_json_schema = staticmethod(timed)
print(json.dumps({"ready": xmask.__file__}), flush=True)
for line in sys.stdin:
    with open(line.strip(), encoding="utf-8") as fh:
        schema = json.load(fh)["schema"]
    if int(sys.argv[6]):
        import numpy as np
        np.ones(int(sys.argv[6]) << 17).sum()  # cold CPU caches (untimed)
    spent[0] = 0.0
    t0 = clock()
    try:
        c = compiler.compile_json_schema(schema, strict_mode=False, any_whitespace=True)
        xmask.GrammarMatcher(c).fill_next_token_bitmask(bitmask)
        out = {"ttfm": clock() - t0, "front": spent[0]}
    except xmask.XmaskError as e:
        out = {"error": type(e).__name__}
    print(json.dumps(out), flush=True)
"""


class Worker:
    """One tree's worker process (``PYTHONPATH=tree``)."""

    def __init__(self, tree: pathlib.Path, data: pathlib.Path, clock: str = "cpu",
                 max_threads=None, sweep_mb: int = 0):
        env = dict(os.environ, PYTHONPATH=str(tree))
        self.p = subprocess.Popen([sys.executable, "-c", WORKER, str(HERE), str(data), str(tree),
                                   clock, str(max_threads or "default"), str(sweep_mb)],
                                  env=env, cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        ready = json.loads(self.p.stdout.readline())
        self.module = ready["ready"]

    def run(self, path: pathlib.Path) -> dict:
        self.p.stdin.write(f"{path}\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", type=pathlib.Path, required=True, help="base tree (its root folder)")
    ap.add_argument("--b", type=pathlib.Path, required=True, help="new tree")
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: the compiling thread's CPU time (steadier on a loaded machine); "
                         "wall: elapsed time, which counts helper threads' work as the caller "
                         "waits for it (the two trees never run at once)")
    ap.add_argument("--threads-a", type=int, default=None,
                    help="GrammarCompiler max_threads of tree A (default: the compiler's)")
    ap.add_argument("--threads-b", type=int, default=None, help="the same for tree B")
    ap.add_argument("--sweep-mb", type=int, default=0,
                    help="sweep this many MB of memory before each compile (untimed): cold CPU "
                         "caches, as in the three-engine bench (64 reproduces it)")
    ap.add_argument("--out", type=pathlib.Path, default=HERE / "results" / "ttfm_ab.json")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    files = sample_files(args.data / "maskbench", args.schemas)
    best = {"a": {}, "b": {}}
    for rnd in range(args.rounds):
        # started in turn: the second of two fresh workers measured up to 6% faster than the
        # first with the same tree on both sides (an A/A run)
        first, second = ("a", "b") if rnd % 2 == 0 else ("b", "a")
        workers = {}
        for tag in (first, second):
            workers[tag] = Worker((args.a if tag == "a" else args.b).resolve(), args.data,
                                  args.clock, args.threads_a if tag == "a" else args.threads_b,
                                  args.sweep_mb)
        for i, f in enumerate(files):
            for tag in ("ab" if i % 2 == 0 else "ba"):
                r = workers[tag].run(f)
                if "ttfm" in r:
                    old = best[tag].get(f.name)
                    if old is None or r["ttfm"] < old["ttfm"]:
                        best[tag][f.name] = r
        modules = {k: w.module for k, w in workers.items()}
        for w in workers.values():
            w.close()
    common = sorted(set(best["a"]) & set(best["b"]))
    summary = {"a": str(args.a), "b": str(args.b), "modules": modules, "schemas": len(common),
               "rounds": args.rounds}
    print(f"A {modules['a']}\nB {modules['b']}\n{len(common)} schemas compiled by both, "
          f"CPU ms, fastest of {args.rounds} cold run(s)")
    for what in ("ttfm", "front"):
        a = np.array([best["a"][n][what] for n in common]) * 1e3
        b = np.array([best["b"][n][what] for n in common]) * 1e3
        rows = {}
        for p in (50, 75, 90, 99):
            pa, pb = np.percentile(a, p), np.percentile(b, p)
            rows[f"p{p}"] = {"a": pa, "b": pb, "b/a": pb / pa}
        rows["sum"] = {"a": a.sum(), "b": b.sum(), "b/a": b.sum() / a.sum()}
        rows["median per-schema b/a"] = float(np.median(b / np.maximum(a, 1e-9)))
        summary[what] = rows
        print(f"{what}: " + "  ".join(f"{k} {v['a']:.2f} -> {v['b']:.2f} ({v['b/a']:.2f}x)"
                                       for k, v in rows.items() if isinstance(v, dict))
              + f"  median per-schema {rows['median per-schema b/a']:.2f}x")
    moved = sorted(common, key=lambda n: best["b"][n]["ttfm"] - best["a"][n]["ttfm"])
    print("moved most (ttfm ms, A -> B):")
    for n in moved[:5] + moved[-5:]:
        print(f"  {n:<50} {best['a'][n]['ttfm'] * 1e3:8.2f} {best['b'][n]['ttfm'] * 1e3:8.2f}")
    summary["per_schema"] = {n: {"a": best["a"][n], "b": best["b"][n]} for n in common}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
