#!/usr/bin/env python
"""Profile of the JSON-schema front end: everything ``compile_json_schema`` does before it
builds the automaton (schema -> grammar IR), over a deterministic MaskBench sample.

Per schema (the dict, as ``bench/bench_json_schema.py`` passes it, options
``strict_mode=False, any_whitespace=True``):

* ``front``: ``GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema, ...)`` up to
  the call that builds the automaton (``CompiledGrammar._build`` is replaced by a stub that
  stops the compile there), so it counts the cache key, context managers, parsing, checks and
  conversion exactly as a real compile does;
* the steps, each timed alone: ``load_schema`` (dict in, value out), the canonical
  ``json.dumps`` (cache key), ``parse_schema_text`` of that text (the old path parsed it
  again), ``index`` (the document index + keyword checks of ``schema_check``), ``convert``
  (``Converter.run``: conversion + the final ``Grammar``).

Times are per-thread CPU time (``time.thread_time_ns``; the machine is shared) in ms: p50,
p90, max and sum.  ``--profile N`` prints the N hottest functions of the front end (cProfile,
cumulative and own time).  ``--hashes FILE`` writes ``{file: sha256(serialize_json) or the
error}`` so two trees can be compared (``--compare FILE``).  Nothing asserts on timings.

Usage:  PYTHONPATH=<tree> python bench/profile_schema_front.py [--schemas 300] [--profile 30]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pathlib
import pstats
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402

OPTIONS = {"strict_mode": False, "any_whitespace": True}
clock = time.thread_time_ns


class _Stop(Exception):
    """Raised by the stub automaton builder: the front end is done."""


def _stats(ns: list) -> dict:
    if not ns:
        return {}
    s = sorted(ns)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))] / 1e6  # noqa: E731
    return {"p50": pick(0.5), "p90": pick(0.9), "max": s[-1] / 1e6, "sum": sum(s) / 1e6}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=300, help="MaskBench files, strided (0: all)")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--reps", type=int, default=3, help="repetitions per schema (min taken)")
    ap.add_argument("--profile", type=int, default=0, help="print this many cProfile hot spots")
    ap.add_argument("--profile-max-ms", type=float, default=50.0,
                    help="profile only schemas whose front end took at most this (outliers "
                         "would dominate the profile; 0: all)")
    ap.add_argument("--hashes", type=pathlib.Path, help="write per-schema grammar hashes here")
    ap.add_argument("--compare", type=pathlib.Path, help="compare grammar hashes with this file")
    ap.add_argument("--out", type=pathlib.Path,
                    default=bj.REPO / "bench" / "results" / "profile_schema_front.json")
    args = ap.parse_args(argv)

    import xmask
    from xmask.compiler import grammar_compiler as gc_mod
    from xmask.grammar import json_schema as js
    from xmask.grammar.json_schema.converter import Converter
    from xmask.grammar.json_schema.layout import Layout
    from xmask.grammar.schema_check import parse_schema_text
    from xmask.limits import DEFAULT_LIMITS

    print(f"xmask from {pathlib.Path(xmask.__file__).parent}")
    files = sample_files(args.data / "maskbench", args.schemas)
    schemas = [(f.name, json.loads(f.read_text(encoding="utf-8"))["schema"]) for f in files]
    info = xmask.TokenizerInfo(["a", "b", "<eos>"], stop_token_ids=[2])  # the front end ignores it
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)

    captured = {}

    def stub_build(grammar, *a, **k):
        captured["t"] = clock()
        captured["g"] = grammar
        raise _Stop

    real_build = gc_mod.CompiledGrammar._build
    gc_mod.CompiledGrammar._build = staticmethod(stub_build)

    def front(schema):
        captured.clear()
        t0 = clock()
        try:
            compiler.compile_json_schema(schema, **OPTIONS)
        except _Stop:
            return captured["t"] - t0, captured["g"], None
        except Exception as e:  # an unsupported / invalid schema: its error time counts too
            return clock() - t0, None, f"{type(e).__name__}: {e}"
        raise AssertionError("compile returned without building")

    steps = {k: [] for k in ("front", "load_schema", "dumps", "parse_text", "index", "convert")}
    hashes, errors = {}, 0
    warnings.simplefilter("ignore")
    for name, schema in schemas:
        best = {}
        for _ in range(max(1, args.reps)):
            t, g, err = front(schema)
            best["front"] = min(best.get("front", t), t)
            t0 = clock()
            loaded = js.load_schema(schema)
            t1 = clock()
            text = json.dumps(loaded)
            t2 = clock()
            try:
                value = parse_schema_text(text)
            except Exception:
                value = None
            t3 = clock()
            best["load_schema"] = min(best.get("load_schema", t1 - t0), t1 - t0)
            best["dumps"] = min(best.get("dumps", t2 - t1), t2 - t1)
            best["parse_text"] = min(best.get("parse_text", t3 - t2), t3 - t2)
            if value is None:
                continue
            t3 = clock()
            try:
                conv = Converter(value, Layout(True, None, None, None), strict_mode=False,
                                 lenient=False, any_order=False, limits=DEFAULT_LIMITS)
            except Exception:
                continue
            t4 = clock()
            try:
                conv.run()
            except Exception:
                pass
            t5 = clock()
            best["index"] = min(best.get("index", t4 - t3), t4 - t3)
            best["convert"] = min(best.get("convert", t5 - t4), t5 - t4)
        for k, v in best.items():
            steps[k].append(v)
        if err is not None:
            errors += 1
            hashes[name] = err
        else:
            hashes[name] = hashlib.sha256(g.serialize_json().encode()).hexdigest()

    print(f"{len(schemas)} schemas ({errors} raise), per-thread CPU ms, min of {args.reps} reps")
    print(f"{'step':<12} {'p50':>8} {'p90':>8} {'max':>8} {'sum':>9}")
    table = {}
    for k, v in steps.items():
        st = table[k] = _stats(v)
        if st:
            print(f"{k:<12} {st['p50']:8.3f} {st['p90']:8.3f} {st['max']:8.3f} {st['sum']:9.1f}")
    slow = sorted(zip(steps["front"], (n for n, _ in schemas)), reverse=True)[:8]
    print("slowest front ends: " + ", ".join(f"{n} {t / 1e6:.1f}" for t, n in slow))

    if args.profile:
        cap = args.profile_max_ms * 1e6
        chosen = [s for (_, s), t in zip(schemas, steps["front"]) if not cap or t <= cap]
        print(f"\nprofiling {len(chosen)} schemas (front end <= {args.profile_max_ms} ms)")
        prof = cProfile.Profile()
        prof.enable()
        for schema in chosen:
            front(schema)
        prof.disable()
        for order in ("cumulative", "tottime"):
            print(f"\ncProfile, sorted by {order}:")
            pstats.Stats(prof).sort_stats(order).print_stats(args.profile)

    gc_mod.CompiledGrammar._build = real_build
    if args.hashes:
        args.hashes.parent.mkdir(parents=True, exist_ok=True)
        args.hashes.write_text(json.dumps(hashes, indent=1) + "\n")
    if args.compare:
        ref = json.loads(args.compare.read_text())
        diff = [n for n in hashes if ref.get(n) != hashes[n]]
        print(f"\ncompare with {args.compare}: {len(hashes) - len(diff)} same, {len(diff)} differ"
              + (": " + ", ".join(diff[:20]) if diff else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"schemas": len(schemas), "errors": errors, "steps": table},
                                   indent=2) + "\n")


if __name__ == "__main__":
    main()
