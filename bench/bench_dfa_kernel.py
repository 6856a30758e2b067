#!/usr/bin/env python
"""CPU time of the per-rule DFAs: ``dfa.rule_dfas``, the determinize + minimize kernel
(``_determinize.build_rule_dfas``) and its Python glue.

Compiles the ``bench_json_schema.py`` sample (same stride, Llama-3, ``strict_mode=False,
any_whitespace=True``) once, capturing the arguments of every ``rule_dfas`` call (whole grammars
and the NFA builder's fragments), then reruns it alone on them, ``--reps`` times each, and
prints per-grammar CPU time (fastest rep, ``time.thread_time``) as p50 / p90 / max / sum.
``--save F`` pickles the captured arguments, ``--load F`` times them without compiling: run it
alternately with two builds (``PYTHONPATH=A`` / ``PYTHONPATH=B``) for a same-input comparison.
``--check`` compares the outputs with the ones stored in the ``--load`` file (written by
``--save``), to show a kernel change gives identical automata.

Usage:  PYTHONPATH=. python bench/bench_dfa_kernel.py --schemas 100 --save /tmp/k.pkl
        PYTHONPATH=. python bench/bench_dfa_kernel.py --load /tmp/k.pkl --reps 20 [--check]
"""

from __future__ import annotations

import argparse
import pathlib
import pickle
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import compile_sample  # noqa: E402

clock = time.thread_time


def capture(data: pathlib.Path, n: int) -> list:
    """[(schema file, kind, args)] of every kernel call while compiling the sample."""
    warnings.simplefilter("ignore")
    xmask, _, compiler, _ = bj.xmask_llama3(data)
    from xmask.compiler import automaton, dfa

    calls: list = []
    orig = dfa.rule_dfas
    current = ["warm-up"]

    def spy(*a, **k):
        # (automaton.py passes runs=True; the replay compares the first six outputs only)
        calls.append((current[0], len(a[2]), a))
        return orig(*a, **k)

    def label(name):  # the schema the next captured calls belong to
        current[0] = name

    dfa.rule_dfas = automaton.rule_dfas = spy
    try:
        compile_sample(xmask, compiler, data / "maskbench", n, label)
    finally:
        dfa.rule_dfas = automaton.rule_dfas = orig
    return calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--save", type=pathlib.Path)
    ap.add_argument("--load", type=pathlib.Path)
    ap.add_argument("--check", action="store_true", help="compare outputs with the --load file's")
    args = ap.parse_args()
    if args.load:
        stored = pickle.loads(args.load.read_bytes())
        calls, ref_out = stored["calls"], stored["out"]
    else:
        calls, ref_out = capture(args.data, args.schemas), None
    from xmask.compiler.dfa import rule_dfas
    import xmask

    outs = [rule_dfas(*a) for _, _, a in calls]
    if args.save:
        args.save.write_bytes(pickle.dumps({"calls": calls, "out": outs}))
        print(f"saved {len(calls)} rule_dfas calls to {args.save}")
    if args.check:
        if ref_out is None:
            raise SystemExit("--check needs --load")
        bad = 0
        for (name, _, _), x, y in zip(calls, outs, ref_out):
            same = all(np.array_equal(u, v) for u, v in zip(x, y))
            if not same:
                bad += 1
                if bad <= 10:
                    print(f"DIFF {name}")
        print(f"{len(calls)} rule_dfas calls, {bad} differ")
    per: dict = {}
    for _ in range(args.reps):
        times: dict = {}
        for name, _, a in calls:
            t = clock()
            rule_dfas(*a)
            times[name] = times.get(name, 0.0) + clock() - t
        for k, v in times.items():
            per[k] = min(per.get(k, v), v)
    grammar = np.array([v for k, v in per.items() if k != "warm-up"]) * 1e3
    print(f"xmask {xmask.__file__}: {len(calls)} rule_dfas calls, {len(grammar)} schemas, "
          f"CPU ms per schema (fastest of {args.reps})")
    print(f"p50 {np.percentile(grammar, 50):.4f}  p90 {np.percentile(grammar, 90):.4f}  "
          f"max {grammar.max():.3f}  sum {grammar.sum():.2f}")


if __name__ == "__main__":
    main()
