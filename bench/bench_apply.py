#!/usr/bin/env python
"""apply_token_bitmask_inplace on CPU: xmask vs XGrammar, same tensors, same run.

Logits (batch, 128,256) as torch float32 / bfloat16 tensors; bitmasks of three kinds: "sparse"
(~1% of tokens allowed, a structural position), "dense" (~99% allowed, inside a string) and
"half" (random bits).  Each engine masks the same logits ``--reps`` times; the table shows the
median time per call in ms and XGrammar / xmask (> 1: xmask faster).  Also shown: xmask's
device-generic torch-ops path (what runs for CUDA logits) forced on CPU, and xmask on NumPy
float32 logits.  Figures go to stdout and ``bench/results/apply.json``; no assertions.

Usage:  python bench/bench_apply.py [--reps 30] [--batches 1,16,64] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time

import numpy as np
import torch

import xmask

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "results" / "apply.json"
VOCAB = 128256


def make_bitmask(kind: str, batch: int, rng) -> torch.Tensor:
    words = (VOCAB + 31) // 32
    if kind == "half":
        bits = rng.integers(-(2**31), 2**31, size=(batch, words), dtype=np.int64)
        return torch.from_numpy(bits.astype(np.int32))
    allowed_share = 0.01 if kind == "sparse" else 0.99
    allowed = rng.random((batch, words * 32)) < allowed_share
    packed = np.packbits(allowed, axis=-1, bitorder="little").view("<i4").astype(np.int32)
    return torch.from_numpy(np.ascontiguousarray(packed))


def median_ms(fn, reps: int) -> float:
    fn()  # warm-up (imports, allocator)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        import xgrammar as xgr
    except ImportError as exc:  # still measure xmask
        print(f"xgrammar not available ({exc}); measuring xmask only")
        xgr = None

    rng = np.random.default_rng(0)
    rows = []
    header = (f"{'batch':>5} {'dtype':>8} {'mask':>6} | {'xmask':>8} {'xgrammar':>9} {'ratio':>6} "
              f"| {'torch-ops':>9} {'numpy':>7}")
    print(f"vocab {VOCAB}, torch threads {torch.get_num_threads()}, median ms of {args.reps}")
    print(header)
    print("-" * len(header))
    for batch in (int(b) for b in args.batches.split(",")):
        for dtype in (torch.float32, torch.bfloat16):
            for kind in ("sparse", "dense", "half"):
                bitmask = make_bitmask(kind, batch, rng)
                logits = torch.randn(batch, VOCAB).to(dtype)
                ours = median_ms(lambda: xmask.apply_token_bitmask_inplace(logits, bitmask),
                                 args.reps)
                ops = median_ms(lambda: xmask.apply_token_bitmask_inplace(
                    logits, bitmask, backend="torch_native"), args.reps)
                theirs = None
                if xgr is not None:
                    theirs = median_ms(lambda: xgr.apply_token_bitmask_inplace(logits, bitmask),
                                       args.reps)
                np_ms = None
                if dtype == torch.float32:
                    np_logits, np_mask = logits.numpy().copy(), bitmask.numpy()
                    np_ms = median_ms(
                        lambda: xmask.apply_token_bitmask_inplace(np_logits, np_mask), args.reps)
                ratio = None if theirs is None else theirs / ours
                rows.append({"batch": batch, "dtype": str(dtype).replace("torch.", ""),
                             "mask": kind, "xmask_ms": ours, "xgrammar_ms": theirs,
                             "xgrammar_over_xmask": ratio, "xmask_torch_ops_ms": ops,
                             "xmask_numpy_ms": np_ms})

                def fmt(v, width, digits=3):
                    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{digits}f}"

                print(f"{batch:>5} {rows[-1]['dtype']:>8} {kind:>6} | {ours:>8.3f} "
                      f"{fmt(theirs, 9)} {fmt(ratio, 6, 2)} | {ops:>9.3f} {fmt(np_ms, 7)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "vocab_size": VOCAB, "torch_threads": torch.get_num_threads(), "reps": args.reps,
        "xgrammar_version": getattr(xgr, "__version__", None), "rows": rows,
    }, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
