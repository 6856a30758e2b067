#!/usr/bin/env python
"""Worst-case compile cost under the default ``CompileLimits`` (issue 15, compile-side bounds).

Each case runs in its own child process with an address-space cap (``--cap-gb``, default 4) and
a wall timeout; the child compiles (Llama-3 tokenizer, default limits unless the case sets
some), fills the first mask and then runs ``precompute()``, and reports how it ended (``ok``
or the xmask error) with the time of each phase; the parent reads the child's peak RSS from
``wait4``.  No assertions: figures go to stdout and ``bench/results/bench_compile_bounds.json``.
``--maskbench N`` adds every N-th MaskBench schema (compile + first fill + precompute).

Usage:  python bench/bench_compile_bounds.py [--only NAME,...] [--maskbench 50] [--cap-gb 4]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))
OUT = REPO / "bench" / "results" / "bench_compile_bounds.json"


def _nested_items(depth: int) -> str:
    s = '{"type": "integer"}'
    for _ in range(depth):
        s = '{"type": "array", "items": ' + s + "}"
    return s


def _maskbench(name: str) -> str:
    with open(DATA / "maskbench" / name, encoding="utf-8") as f:
        return json.dumps(json.load(f)["schema"])


# name -> (kind, text, CompileLimits overrides)
CASES = {
    "schema_pattern_nested_100x100": (
        "schema", json.dumps({"type": "string", "pattern": "^([a-z]{0,100}-){0,100}$"}), {}),
    "regex_[a-z]*a[a-z]{14}": ("regex", "[a-z]*a[a-z]{14}", {}),
    "schema_items_10000_deep": ("schema", _nested_items(10_000), {}),
    "maskbench_allany16": ("schema", None, {}),  # filled in from the data dir
    "ebnf_ambiguous_r0": (
        "ebnf", 'root ::= r0\nr0 ::= (("  " | . r0 [\\u00e0-\\u00ff] r0)?){1,3}', {}),
    "ebnf_recursive_in_repeat_5s": (
        "ebnf", 'root ::= ("[" root "]"){0,10000} | "x"',
        {"max_compile_seconds": 5, "max_context_work": 10**12}),
}

_CHILD = r"""
import json, resource, sys, time
cap = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
import xmask
kind, text, limits, tok = json.load(open(sys.argv[1]))
info = xmask.TokenizerInfo.from_huggingface(tok)
# build the tokenizer's shared vocabulary tables first (once per tokenizer, not per compile)
_w = xmask.GrammarCompiler(info, cache_enabled=False).compile_grammar('root ::= "a"')
xmask.GrammarMatcher(_w).fill_next_token_bitmask(xmask.allocate_token_bitmask(1, info.vocab_size))
out = {"phase": "compile"}
t0 = time.monotonic()
try:
    c = xmask.GrammarCompiler(info, limits=xmask.CompileLimits(**limits), cache_enabled=False)
    f = {"ebnf": c.compile_grammar, "regex": c.compile_regex, "schema": c.compile_json_schema}[kind]
    g = f(text)
    out["compile_s"] = time.monotonic() - t0
    out["phase"] = "fill"
    t1 = time.monotonic()
    m = xmask.GrammarMatcher(g)
    bm = xmask.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm)
    out["fill_s"] = time.monotonic() - t1
    out["phase"] = "precompute"
    t2 = time.monotonic()
    g.precompute()
    out["precompute_s"] = time.monotonic() - t2
    out["memory_size_bytes"] = g.memory_size_bytes
    peaks = getattr(g._mask_cache, "peaks", None)  # (largest top set, stack bytes) of a walk
    if peaks is not None:
        out["peak_classify_tops"], out["peak_classify_stack_bytes"] = peaks()
    out["result"] = "ok"
except xmask.XmaskError as e:
    out["result"] = type(e).__name__
    out["message"] = str(e)[:300]
except BaseException as e:
    out["result"] = "NOT-XMASK " + type(e).__name__
    out["message"] = str(e)[:300]
out["total_s"] = time.monotonic() - t0
print(json.dumps(out), flush=True)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--cap-gb", type=float, default=4.0)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--maskbench", type=int, default=0, help="every N-th MaskBench schema")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    tok = DATA / "tokenizers" / "llama3"
    cap = int(args.cap_gb * (1 << 30))
    cases = dict(CASES)
    cases["maskbench_allany16"] = ("schema", _maskbench("Handwritten---allany16.json"), {})
    if args.only:
        keep = set(args.only.split(","))
        cases = {k: v for k, v in cases.items() if k in keep}
    if args.maskbench:
        files = sorted(os.listdir(DATA / "maskbench"))[:: args.maskbench]
        for name in files:
            cases["mb/" + name] = ("schema", _maskbench(name), {})
    results = {}
    for name, (kind, text, limits) in cases.items():
        rep = _run_measured(kind, text, limits, cap, args.timeout, tok)
        results[name] = rep
        print(f"{name:40s} {rep['result']:24s} wall {rep['wall_s']:7.2f} s  peak RSS "
              f"{rep.get('peak_rss_mb', -1):7.0f} MB  [{rep.get('phase', '')}"
              f" c{rep.get('compile_s', -1):.2f} f{rep.get('fill_s', -1):.2f} p{rep.get('precompute_s', -1):.2f}]"
              f" {rep.get('message', '')[:90]}", flush=True)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


def _run_measured(kind, text, limits, cap, timeout, tok):
    """run_case, with the child's own peak RSS from os.wait4."""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([kind, text, limits, str(tok)], f)
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", _CHILD, f.name, str(cap)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = t + timeout
    out_chunks = []
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            p.kill()
            timed_out = True
            break
        if sel.select(timeout=min(left, 1.0)):
            chunk = p.stdout.readline()
            if not chunk:
                break
            out_chunks.append(chunk)
    _, status, ru = os.wait4(p.pid, 0)
    stderr = p.stderr.read()
    lines = "".join(out_chunks).strip().splitlines()
    if timed_out:
        rep = {"result": f"TIMEOUT>{timeout:g}s"}
    elif lines:
        rep = json.loads(lines[-1])
    else:
        rep = {"result": f"CRASH status={status}", "message": stderr[-300:]}
    os.unlink(f.name)
    rep["wall_s"] = time.monotonic() - t
    rep["peak_rss_mb"] = ru.ru_maxrss / 1024
    return rep


if __name__ == "__main__":
    main()
