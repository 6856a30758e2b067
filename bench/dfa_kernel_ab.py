#!/usr/bin/env python
"""CPU time of the determinize + minimize kernel of two xmask trees, in ONE process (A/B).

Two runs of the sample move 5-40% apart on this shared 2-core machine, far more than most kernel
changes.  This script loads the base tree's ``_minimize`` and ``_determinize`` extensions next to
the tested tree's (same module names, loaded from the base's files; the base's ``_determinize``
finds the base's ``_minimize`` while it initializes), captures the arguments of every
whole-grammar ``build_rule_dfas`` call while compiling the ``bench_json_schema.py`` sample with the
tested tree (Llama-3, ``strict_mode=False, any_whitespace=True``), checks that both kernels
return identical arrays, then times each call with both kernels alternately (A then B, B then A),
a 16 MB array walked before each call so that the caches are cold as in a real compile.  Prints
per-grammar CPU time (``time.thread_time``), fastest and mean of ``--reps``: sum, median, and the
median per-grammar ratio.  No assertions beyond the identity check.

Usage:  PYTHONPATH=<tree> python bench/dfa_kernel_ab.py --base /work/main [--schemas 100]
        [--reps 9]
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import compile_sample  # noqa: E402


def load_base(base: pathlib.Path):
    """The base tree's ``_determinize`` module, linked to the base's ``_minimize``."""
    def load(name):
        path = next((base / "xmask" / "compiler").glob(f"{name}.cpython-*.so"))
        spec = importlib.util.spec_from_file_location(f"xmask.compiler.{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    key = "xmask.compiler._minimize"
    mine = sys.modules[key]
    sys.modules[key] = load("_minimize")
    try:
        return load("_determinize")
    finally:
        sys.modules[key] = mine


def capture(data: pathlib.Path, n: int) -> list:
    """The ``build_rule_dfas`` arguments of each whole-grammar kernel call of the sample."""
    import xmask
    from xmask.compiler import dfa

    _, _, compiler, _ = bj.xmask_llama3(data)
    calls: list = []
    orig = dfa.build_rule_dfas

    def spy(*a):
        calls.append(a)
        return orig(*a)

    compiler.compile_json_schema({"type": "object"})  # fragment memos, not timed
    dfa.build_rule_dfas = spy
    try:
        compile_sample(xmask, compiler, data / "maskbench", n)
    finally:
        dfa.build_rule_dfas = orig
    return calls


def flat(out) -> list:
    return [np.asarray(x) for x in (*out[:8], *out[8])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=pathlib.Path, required=True, help="base tree (its root folder)")
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from xmask.compiler import _determinize as tested

    base = load_base(args.base.resolve())
    calls = capture(args.data, args.schemas)
    # (fragment DFAs are memoized per process: only whole grammars call the kernel here)
    differ = sum(not all(np.array_equal(x, y) for x, y in
                         zip(flat(base.build_rule_dfas(*a)), flat(tested.build_rule_dfas(*a))))
                 for a in calls)
    print(f"A {base.__file__}\nB {tested.__file__}\n{len(calls)} kernel calls, {differ} differ")
    big = np.zeros(16 << 20, dtype=np.uint8)
    clock = time.thread_time_ns
    best = {k: np.full(len(calls), np.inf) for k in "ab"}
    mean = {k: np.zeros(len(calls)) for k in "ab"}
    for r in range(args.reps):
        for i, a in enumerate(calls):
            for tag in ("ab" if (i + r) % 2 == 0 else "ba"):
                fn = base.build_rule_dfas if tag == "a" else tested.build_rule_dfas
                big[::64] += 1  # evict the caches, as the rest of a compile does
                t = clock()
                fn(*a)
                dt = (clock() - t) / 1e6
                best[tag][i] = min(best[tag][i], dt)
                mean[tag][i] += dt / args.reps
    for what, d in (("fastest", best), ("mean", mean)):
        a, b = d["a"], d["b"]
        print(f"{what:8s} CPU ms: sum {a.sum():.2f} -> {b.sum():.2f} ({b.sum() / a.sum():.3f}x)  "
              f"median {np.median(a):.4f} -> {np.median(b):.4f} "
              f"({np.median(b) / np.median(a):.3f}x)  median per-grammar {np.median(b / a):.3f}x")


if __name__ == "__main__":
    main()
