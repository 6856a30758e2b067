#!/usr/bin/env python
"""Ambiguous grammars: mask and accept time as the input grows (the graph-structured stack).

A persistent parse stack that keeps every parse apart holds 2^n stacks after n bytes of
``root ::= y "b" | z "c" | "d"; y ::= "a" root; z ::= "a" root``; xmask's stack merges stacks
with the same top state (a GSS, see xmask/runtime/_stack_gss.pyx), so a byte costs at most
O(states x parents).  For each family and n in --sizes this measures, on a real tokenizer:

* accept: ``accept_string`` of the n-byte input (total, and per byte);
* mask: ``fill_next_token_bitmask`` after those n bytes (median of --reps calls);
* the stack's top count and arena size after the n bytes;

then fits the growth exponent (log-log least squares over the sizes) of the mask time and of
the accept time per byte.  ``--old`` adds the stack without merging (xmask before the GSS) for
--old-sizes (small: it is exponential on two of the families).  xgrammar and llguidance run on the same
grammar in the same process when installed (``--engines``); a peer that fails or runs past the
budget is reported as such.  Nothing here asserts on timings.  JSON goes to
bench/results/bench_ambiguous.json.

Usage:  python bench/bench_ambiguous.py [--tokenizer llama3] [--sizes 10,30,100,300,1000] [--plot]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import statistics
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "bench" / "results" / "bench_ambiguous.json"

# name -> (EBNF, input of n bytes, llguidance Lark equivalent or None)
FAMILIES = {
    "yz": ('root ::= y "b" | z "c" | "d"\ny ::= "a" root\nz ::= "a" root',
           lambda n: b"a" * n,
           'start: y "b" | z "c" | "d"\ny: "a" start\nz: "a" start'),
    "ab": ('root ::= "a" root | "a" root "b" | ""',
           lambda n: b"a" * n,
           'start: "a" start | "a" start "b" | ""'),
    "r0": ('root ::= r0\nr0 ::= (("  " | . r0 [\\u00e0-\\u00ff] r0)?){1,3}',
           lambda n: b" " * n,
           None),
}


def perf():
    return time.perf_counter_ns()


def fit_exponent(ns, ts):
    """Least-squares slope of log(t) over log(n) (None with fewer than two positive points)."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(ns, ts) if t and t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def measure(accept, fill, data, reps):
    """Time accept(data) once, then fill() reps times (median)."""
    fill()  # the start state's mask outside the timing (a lazy cache classifies it here)
    t0 = perf()
    ok = accept(data)
    accept_ns = perf() - t0
    fills = []
    for _ in range(reps):
        t0 = perf()
        fill()
        fills.append(perf() - t0)
    return {"ok": bool(ok), "accept_ns": accept_ns, "fill_ns": statistics.median(fills)}


class XmaskRun:
    def __init__(self, tok_path, merge=True):
        import xmask
        from xmask.runtime import _stack_gss as _stack

        self.xmask, self.stack = xmask, _stack
        self.merge = merge
        self.name = "xmask" if merge else "xmask-old"
        self.info = xmask.TokenizerInfo.from_huggingface(str(tok_path))
        self.compiler = xmask.GrammarCompiler(self.info)
        self.vocab = self.info.vocab_size

    def prepare(self, ebnf, lark):
        self.cg = self.compiler.compile_grammar(ebnf)
        self.bm = np.asarray(self.xmask.allocate_token_bitmask(1, self.vocab))

    def run(self, data, reps):
        old = self.stack.set_max_conflicts(0 if self.merge else 1 << 60)
        try:
            # the runtime caps lifted: this measures the cost they bound, not where they stop it
            m = self.xmask.GrammarMatcher(self.cg, limits=self.xmask.RuntimeLimits(
                max_stack_tops=1 << 40, max_work_per_call=1 << 60))
            r = measure(m.accept_string, lambda: m.fill_next_token_bitmask(self.bm), data, reps)
            r.update(tops=len(m._debug_top_states()), nodes=m._debug_arena_nodes())
            return r
        finally:
            self.stack.set_max_conflicts(old)


class XGrammarRun:
    name = "xgrammar"

    def __init__(self, tok_path):
        import tokenizers
        import xgrammar as xgr

        self.xgr = xgr
        tok = tokenizers.Tokenizer.from_file(str(tok_path))
        vocab = tok.get_vocab(with_added_tokens=True)
        self.vocab = max(vocab.values()) + 1
        enc = [""] * self.vocab
        for s, i in vocab.items():
            enc[i] = s
        self.info = xgr.TokenizerInfo(enc, vocab_type=xgr.VocabType.BYTE_LEVEL,
                                      vocab_size=self.vocab)
        self.compiler = xgr.GrammarCompiler(self.info)

    def prepare(self, ebnf, lark):
        self.cg = self.compiler.compile_grammar(ebnf)
        self.bm = self.xgr.allocate_token_bitmask(1, self.vocab)

    def run(self, data, reps):
        m = self.xgr.GrammarMatcher(self.cg)
        return measure(lambda d: m.accept_string(d.decode("utf-8")),
                       lambda: m.fill_next_token_bitmask(self.bm), data, reps)


class LLGuidanceRun:
    name = "llguidance"

    def __init__(self, tok_path):
        import llguidance
        import llguidance.numpy as llg_np
        import tokenizers

        self.llg, self.llg_np = llguidance, llg_np
        tok = tokenizers.Tokenizer.from_file(str(tok_path))
        self.vocab = tok.get_vocab_size(with_added_tokens=True)
        self.tok = tok
        self.lltok = llguidance.LLTokenizer(str(tok_path), n_vocab=self.vocab)

    def prepare(self, ebnf, lark):
        if lark is None:
            raise RuntimeError("no Lark equivalent for this family")
        self.grammar = self.llg.LLMatcher.grammar_from_lark(lark)
        self.bm = self.llg_np.allocate_token_bitmask(1, self.vocab)

    def run(self, data, reps):
        m = self.llg.LLMatcher(self.lltok, self.grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        ids = self.lltok.tokenize_bytes(data)
        r = measure(lambda _: all(m.consume_token(t) for t in ids) and not m.is_error(),
                    lambda: self.llg_np.fill_next_token_bitmask(m, self.bm, 0), data, reps)
        r["note"] = f"{len(ids)} tokens"
        return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", default="llama3", help="tokenizer under DATA/tokenizers/")
    ap.add_argument("--sizes", default="10,30,100,300,1000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--engines", default="xmask,xgrammar,llguidance")
    ap.add_argument("--reps", type=int, default=5, help="fills timed per point (median)")
    ap.add_argument("--old", action="store_true", help="also the stack without merging")
    ap.add_argument("--old-sizes", default="8,12,16,18",
                    help="sizes for --old (it is exponential on some families)")
    ap.add_argument("--old-budget", type=float, default=2.0,
                    help="stop the unmerged stack (and a slow peer) after a point this slow (s)")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("--plot", action="store_true",
                    help="also draw accept us/byte and fill us over n (matplotlib) next to --out")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    old_sizes = [int(x) for x in args.old_sizes.split(",")]
    tok_path = DATA / "tokenizers" / args.tokenizer / "tokenizer.json"

    makers = {"xmask": lambda: XmaskRun(tok_path), "xgrammar": lambda: XGrammarRun(tok_path),
              "llguidance": lambda: LLGuidanceRun(tok_path)}
    engines = []
    for name in args.engines.split(","):
        try:
            engines.append(makers[name]())
        except Exception as e:  # noqa: BLE001 - an optional peer: report and go on
            print(f"[{name}] skipped: {type(e).__name__}: {e}")
        if name == "xmask" and args.old and engines and engines[-1].name == "xmask":
            engines.append(XmaskRun(tok_path, merge=False))

    results = {}
    rows = []
    for fam in args.families.split(","):
        ebnf, make_input, lark = FAMILIES[fam]
        for eng in engines:
            key = f"{fam}/{eng.name}"
            try:
                eng.prepare(ebnf, lark)
            except Exception as e:  # noqa: BLE001
                print(f"[{key}] skipped: {type(e).__name__}: {str(e)[:200]}")
                continue
            points = []
            for n in (old_sizes if eng.name == "xmask-old" else sizes):
                try:
                    r = eng.run(make_input(n), args.reps)
                except Exception as e:  # noqa: BLE001
                    print(f"[{key}] n={n}: {type(e).__name__}: {str(e)[:200]}")
                    break
                r["n"] = n
                points.append(r)
                rows.append((fam, eng.name, n, r))
                if (r["accept_ns"] + r["fill_ns"]) / 1e9 > args.old_budget and eng.name != "xmask":
                    print(f"[{key}] stopped after n={n} (over {args.old_budget} s)")
                    break
            ok_points = [p for p in points if p["ok"]]
            results[key] = {
                "points": points,
                "fill_exponent": fit_exponent([p["n"] for p in ok_points],
                                              [p["fill_ns"] for p in ok_points]),
                "accept_per_byte_exponent": fit_exponent(
                    [p["n"] for p in ok_points], [p["accept_ns"] / p["n"] for p in ok_points]),
            }

    print(f"\n{'family':6} {'engine':10} {'n':>5} {'ok':>3} {'accept ms':>10} {'us/byte':>8} "
          f"{'fill us':>9} {'tops':>5} {'nodes':>8}")
    for fam, eng, n, r in rows:
        print(f"{fam:6} {eng:10} {n:5d} {'y' if r['ok'] else 'n':>3} {r['accept_ns'] / 1e6:10.3f} "
              f"{r['accept_ns'] / 1e3 / n:8.2f} {r['fill_ns'] / 1e3:9.1f} "
              f"{r.get('tops', ''):>5} {r.get('nodes', ''):>8}")
    print("\nfitted exponents (log-log over n): fill time, accept time per byte")
    for key, v in results.items():
        fe, ae = v["fill_exponent"], v["accept_per_byte_exponent"]
        print(f"  {key:22} fill {'-' if fe is None else f'{fe:+.2f}'}   "
              f"accept/byte {'-' if ae is None else f'{ae:+.2f}'}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "tokenizer": args.tokenizer, "sizes": sizes, "reps": args.reps,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "families": {k: v[0] for k, v in FAMILIES.items()},
        "results": results,
    }, indent=1))
    print(f"\nwrote {args.out}")
    if args.plot:
        plot(results, args.out.with_suffix(".png"))


def plot(results, path):
    """Accept time per byte and fill time over n, log-log, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, v in results.items():
        pts = [p for p in v["points"] if p["ok"]]
        if not pts:
            continue
        ns = [p["n"] for p in pts]
        axes[0].plot(ns, [p["accept_ns"] / 1e3 / p["n"] for p in pts], marker="o", label=key)
        axes[1].plot(ns, [p["fill_ns"] / 1e3 for p in pts], marker="o", label=key)
    for ax, title in zip(axes, ("accept_string, us per byte", "fill after n bytes, us")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (bytes of input)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
