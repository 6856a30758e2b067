#!/usr/bin/env python
"""What the lazy JSON Schema conversion leaves on the path to a first mask (issue 10).

For each schema of the ``bench_json_schema.py`` sample (same stride, ``strict_mode=False``,
``any_whitespace=True``), in CPU time of this thread, one cold run each, interleaved:

* ``eager``: ``Converter.run`` (the whole schema -> grammar IR, what a compile pays today);
* ``partial``: ``Converter.run_partial`` (the root and every rule that cannot be left for
  later, :mod:`xmask.grammar.json_schema.deferrable`), what a lazy compile would pay first;
* ``llguidance``: llguidance's whole time to first mask of the same schema (when installed).

Prints p50 / p75 / p90 / sum, the share of rules left pending, and writes
``bench/results/lazy_front_end.json``.

Usage:  python bench/lazy_front_end.py [--schemas 100] [--data ../shared/data]
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

clock = time.thread_time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--out", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parent / "results" / "lazy_front_end.json")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import xmask
    from xmask.grammar.json_schema.layout import Layout
    from xmask.grammar.json_schema.converter import Converter

    try:
        from profile_ttfm import llguidance_first_mask
        peer = llguidance_first_mask(args.data)
    except ImportError:
        peer = None
    layout = Layout(True)
    Converter({"type": "object", "properties": {"a": {"type": "string"}}}, layout).run()
    rows = []
    for f in sample_files(args.data / "maskbench", args.schemas):
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        try:
            t = clock()
            grammar = Converter(schema, layout, strict_mode=False).run()
            t_eager = clock() - t
            t = clock()
            done, pending = Converter(schema, layout, strict_mode=False).run_partial()
            t_partial = clock() - t
        except xmask.XmaskError:
            continue
        row = {"name": f.name, "eager": t_eager, "partial": t_partial,
               "rules": len(grammar.rules), "done": len(done), "pending": len(pending)}
        if peer is not None:
            t = clock()
            m = peer(schema)
            row["llguidance"] = clock() - t if not m.is_error() else None
        rows.append(row)
    cols = ["eager", "partial"] + (["llguidance"] if peer is not None else [])
    both = [r for r in rows if peer is None or r.get("llguidance") is not None]
    print(f"{len(both)} schemas, CPU ms, one cold run each")
    print(f"{'':12}{'p50':>9}{'p75':>9}{'p90':>9}{'sum':>9}")
    for c in cols:
        v = np.array([r[c] for r in both]) * 1e3
        print(f"{c:12}{np.percentile(v, 50):9.3f}{np.percentile(v, 75):9.3f}"
              f"{np.percentile(v, 90):9.3f}{v.sum():9.1f}")
    if peer is not None:
        llg = np.array([r["llguidance"] for r in both])
        for c in ("eager", "partial"):
            v = np.array([r[c] for r in both])
            print(f"{c} / llguidance's whole TTFM: p50 {np.percentile(v, 50) / np.percentile(llg, 50):.2f}x"
                  f", p90 {np.percentile(v, 90) / np.percentile(llg, 90):.2f}x")
    share = np.array([r["done"] / max(1, r["rules"]) for r in both])
    print(f"rules generated up front: median share {np.median(share):.2f}, "
          f"{sum(r['done'] for r in both)} of {sum(r['rules'] for r in both)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
