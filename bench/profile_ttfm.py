#!/usr/bin/env python
"""Time to first mask by phase, per schema, in CPU time (xmask only).

Compile + matcher + first fill of each schema of the ``bench_json_schema.py`` sample (same
stride, Llama-3, ``strict_mode=False, any_whitespace=True``, cache off), each phase timed with
``time.thread_time`` (CPU time of the compiling thread: the shared machine's load inflates it
far less than wall time; the phases that release the GIL still run in this thread): schema ->
IR, special literals, token sets, the automaton and its sub-phases (inlining, NFA, per-rule
DFAs, pruning, analysis, context check, the rest of its assembly), runtime tables, empty mask
cache, the first part's rule selection (``first_reach``) and IR (``partial_ir``), the
compiler's own overhead (canonical text, context managers), matcher creation and
first fill; ``ir->compiled`` sums the phases from the grammar IR to the compiled grammar
(special literals .. empty cache).  Prints p50 /
p90 / p99 / max / sum and share of the summed TTFM, then the slowest schemas by phase.
``--reps N`` keeps each schema's fastest run (later runs find the process-wide memos warm;
1 = cold, as the bench); ``--cprofile N`` prints cProfile's N hottest functions;
``--sweep-mb 64`` evicts the CPU caches before each compile (the three-engine bench's regime).

Usage:  PYTHONPATH=. python bench/profile_ttfm.py [--schemas 100] [--reps 1] [--cprofile 40]
        [--sweep-mb 64]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pathlib
import pstats
import sys
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402

clock = time.thread_time
LABELS = ["ttfm", "compile", "schema_ir", "ir->compiled", "special_lit", "token_sets",
          "automaton", "a.inline", "a.nfa", "a.dfa_rules", "a.prune", "a.analyze", "a.ctxwork",
          "a.rest", "tables", "new_cache", "first_reach", "partial_ir", "overhead", "matcher",
          "fill"]
# grammar IR -> CompiledGrammar: the compiler's phases after the front end
IR_TO_COMPILED = ("special_lit", "token_sets", "automaton", "tables", "new_cache")


def time_calls(owner, name: str, label: str, acc: dict, static: bool = False) -> None:
    """Wrap ``owner.name`` (``static``: a staticmethod of a class) so that each call adds its
    CPU seconds to ``acc[label]``."""
    fn = getattr(owner, name)
    main = threading.main_thread()

    def timed(*a, **k):
        if threading.current_thread() is not main:  # (the two-part compile's rest worker)
            return fn(*a, **k)
        t = clock()
        try:
            return fn(*a, **k)
        finally:
            acc[label] = acc.get(label, 0.0) + clock() - t
    setattr(owner, name, staticmethod(timed) if static else timed)


def time_front_end(acc: dict, label: str = "schema_ir") -> None:
    """Time the compiler's schema -> Grammar step (``Grammar.from_json_schema`` as
    ``grammar_compiler`` calls it) into ``acc[label]``."""
    import xmask.compiler.grammar_compiler as gcm
    from xmask.grammar.json_schema.converter import Converter

    time_calls(gcm.Grammar, "from_json_schema", label, acc, static=True)
    # a two-part compile converts through the converter (its first part, or all of it)
    time_calls(Converter, "run_partial", label, acc)
    time_calls(Converter, "finish", label, acc)
    import xmask.grammar.json_schema.api as api
    time_calls(api, "json_schema_converter", label, acc)


def install_timers(acc: dict) -> None:
    """Wrap the compile's phase functions; each adds its CPU seconds to ``acc[label]``."""
    from xmask.compiler import automaton as am, compiled as cm, lazy_schema as lz

    time_front_end(acc)
    # the two-part compile's own steps between the front end and the first part's build
    time_calls(lz, "first_part_rules", "first_reach", acc)
    time_calls(lz, "partial_grammar", "partial_ir", acc)
    for name, label in [("with_special_literals", "special_lit"), ("lower_token_sets", "token_sets"),
                        ("build_automaton", "automaton"), ("AutomatonTables", "tables"),
                        ("new_mask_cache", "new_cache")]:
        time_calls(cm, name, label, acc)
    for label, name in [("inline", "_inline_small_rules"), ("nfa", "_build_nfas"),
                        ("dfa_rules", "_build_rule_dfas"), ("prune", "_prune_unproductive"),
                        ("analyze", "_analyze"), ("ctxwork", "_check_context_work")]:
        time_calls(am, name, "a." + label, acc)


def llguidance_first_mask(data: pathlib.Path):
    """A function ``run(schema) -> LLMatcher`` that compiles a schema with llguidance (Llama-3,
    ``bench_json_schema``'s options), creates its matcher and fills its first mask; a schema
    llguidance refuses gives a matcher whose ``is_error()`` is true."""
    import llguidance
    import llguidance.numpy as llnp
    from bench_json_schema import LLG_JSON_OPTIONS

    tok = llguidance.LLTokenizer(str(data / "tokenizers" / "llama3" / "tokenizer.json"),
                                 n_vocab=128256, eos_token=128009)
    bm = llnp.allocate_token_bitmask(1, 128256)

    def run(schema):
        g = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults=LLG_JSON_OPTIONS)
        m = llguidance.LLMatcher(tok, g, log_level=0)
        llnp.fill_next_token_bitmask(m, bm, 0)
        return m
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    ap.add_argument("--cprofile", type=int, default=0)
    ap.add_argument("--top", type=int, default=8, help="slowest schemas to list")
    ap.add_argument("--sweep-mb", type=int, default=0,
                    help="sweep this many MB of memory (untimed) before each compile, so that "
                         "it starts with cold CPU caches, as in the three-engine bench after "
                         "XGrammar's compile (64 reproduces it)")
    ap.add_argument("--beside-llguidance", action="store_true",
                    help="before each xmask compile, compile the same schema with llguidance "
                         "and fill its first mask (untimed), as ttfm_pair.py interleaves them: "
                         "shows which phases the other engine's memory traffic inflates")
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    xmask, _, compiler, bitmask = bj.xmask_llama3(args.data)
    schemas = [(f.name, json.loads(f.read_text(encoding="utf-8"))["schema"])
               for f in sample_files(args.data / "maskbench", args.schemas)]
    acc: dict = {}
    install_timers(acc)
    compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    prof = cProfile.Profile() if args.cprofile else None
    peer = llguidance_first_mask(args.data) if args.beside_llguidance else None
    rows = {}
    for name, schema in schemas:
        best = None
        for _ in range(args.reps):
            if peer is not None:
                peer(schema)
            if args.sweep_mb:
                np.ones(args.sweep_mb << 17).sum()  # (8-byte floats: MB << 17 of them)
            acc.clear()
            if prof:
                prof.enable()
            t0 = clock()
            try:
                compiled = compiler.compile_json_schema(schema, strict_mode=False,
                                                        any_whitespace=True)
            except xmask.XmaskError:
                best = None
                break
            finally:
                t1 = clock()
            matcher = xmask.GrammarMatcher(compiled)
            t2 = clock()
            matcher.fill_next_token_bitmask(bitmask)
            t3 = clock()
            if prof:
                prof.disable()
            r = dict(acc, compile=t1 - t0, matcher=t2 - t1, fill=t3 - t2, ttfm=t3 - t0)
            r["overhead"] = r["compile"] - sum(v for k, v in acc.items() if not k.startswith("a."))
            r["ir->compiled"] = sum(acc.get(k, 0.0) for k in IR_TO_COMPILED)
            r["a.rest"] = acc.get("automaton", 0.0) - sum(
                v for k, v in acc.items() if k.startswith("a."))
            best = r if best is None or r["ttfm"] < best["ttfm"] else best
        if best is not None:
            rows[name] = best
    if prof:
        prof.disable()
    total = sum(r["ttfm"] for r in rows.values())
    print(f"xmask {xmask.__file__}: {len(rows)} schemas compiled, CPU ms, fastest of {args.reps}")
    print(f"{'phase':<14}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}{'sum':>9}{'share':>8}")
    for label in LABELS:
        xs = np.array([r.get(label, 0.0) for r in rows.values()]) * 1e3
        print(f"{label:<14}{np.percentile(xs, 50):9.3f}{np.percentile(xs, 90):9.3f}"
              f"{np.percentile(xs, 99):9.2f}{xs.max():9.2f}{xs.sum():9.1f}"
              f"{xs.sum() / total / 10:7.1f}%")
    for name, r in sorted(rows.items(), key=lambda kv: -kv[1]["ttfm"])[:args.top]:
        print(f"  {name}: " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in
                                        sorted(r.items(), key=lambda kv: -kv[1])
                                        if v > 2e-4 and k != "ir->compiled"))
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)


if __name__ == "__main__":
    main()
