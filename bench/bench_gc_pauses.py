#!/usr/bin/env python
"""Garbage-collector pauses that xmask compiles cause, as a server would see them.

A background thread compiles MaskBench schemas one after the other (cache off, as a server
that compiles a schema per request), creates a matcher and fills the first mask, while the
main thread runs Python that allocates; the last ``--keep`` compiled grammars stay alive (a
server's cache).  Every collection of CPython's cyclic collector is recorded with
``gc.callbacks``: its generation and its CPU time (``time.thread_time``: the collector holds
the GIL, so this is how long every other Python thread waits, and CPU time is not inflated
when the machine is busy).  Issue 10's target: no stall over 5 ms.

Compare two checkouts in one run by calling it twice with different ``PYTHONPATH``; the
largest schemas stress it most (``--largest``, by file size).  Writes
``bench/results/gc_pauses.json``.  No assertions.

Usage:  python bench/bench_gc_pauses.py [--largest 12] [--rounds 3] [--keep 20]
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import pathlib
import sys
import threading
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402

DEFAULT_OUT = bj.REPO / "bench" / "results" / "gc_pauses.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--largest", type=int, default=12, help="the N largest MaskBench schemas that compile")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", type=int, default=20, help="compiled grammars kept alive")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    xmask, _, compiler, bitmask = bj.xmask_llama3(args.data)
    texts = []
    for f in sorted((args.data / "maskbench").glob("*.json"), key=lambda p: -p.stat().st_size):
        text = json.dumps(json.loads(f.read_text(encoding="utf-8"))["schema"])
        try:
            compiler.compile_json_schema(text)
        except xmask.XmaskError:
            continue
        texts.append((f.name, text))
        if len(texts) >= args.largest:
            break

    events = []
    started = {}

    def on_gc(phase, gc_info):
        key = threading.get_ident()
        if phase == "start":
            started[key] = time.thread_time_ns()
        elif key in started:
            events.append((gc_info["generation"], (time.thread_time_ns() - started.pop(key)) / 1e6))

    def job(text, kept):
        compiled = compiler.compile_json_schema(text)
        xmask.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask)
        kept.append(compiled)
        del kept[:-args.keep]

    gc.collect()
    gc.callbacks.append(on_gc)
    kept: list = []
    t0 = time.perf_counter()
    try:
        for _ in range(args.rounds):
            for _, text in texts:
                th = threading.Thread(target=job, args=(text, kept))
                th.start()
                junk = []
                while th.is_alive():  # the server's own Python work: small containers
                    junk.append([1, {"a": 2}])
                    if len(junk) > 2000:
                        junk.clear()
                th.join()
    finally:
        gc.callbacks.remove(on_gc)
    wall = time.perf_counter() - t0
    # what the collections that remain cost: a full one scans every tracked object, the kept
    # compiled grammars' IR trees included
    c0 = time.thread_time_ns()
    gc.collect()
    full_ms = (time.thread_time_ns() - c0) / 1e6
    by_gen = collections.defaultdict(list)
    for gen, ms in events:
        by_gen[gen].append(ms)
    rows = {}
    print(f"xmask {xmask.__file__}: {len(texts)} schemas x {args.rounds} rounds in {wall:.1f} s, "
          f"{len(gc.get_objects())} tracked objects at the end; a full collection then: "
          f"{full_ms:.1f} ms CPU")
    for gen in sorted(by_gen):
        ms = by_gen[gen]
        rows[f"gen{gen}"] = dict(collections=len(ms), max_ms=max(ms), total_ms=sum(ms),
                                 over_5ms=sum(x > 5 for x in ms))
        print(f"  gen{gen}: {len(ms):5d} collections, longest {max(ms):7.2f} ms CPU, "
              f"total {sum(ms):8.1f} ms, over 5 ms: {rows[f'gen{gen}']['over_5ms']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(dict(xmask=xmask.__file__, schemas=[n for n, _ in texts],
                                        rounds=args.rounds, keep=args.keep, by_generation=rows,
                                        full_collection_ms=full_ms),
                                   indent=1))


if __name__ == "__main__":
    main()
