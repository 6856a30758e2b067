#!/usr/bin/env python
"""Compile-time cost of letting literals spell special tokens (``special_literals.py``).

For a strided sample of MaskBench JSON schemas and for the Harmony / Kimi tool-call structural
tags, on o200k (gpt-oss) and Llama-3: the time of the rewrite step alone
(``with_special_literals``: one walk that also answers "any TokenSet?", index already built) against the whole compile of the same grammar
(``GrammarCompiler.compile_grammar``, caches off, lazy mask cache), and the one-off time to
build the per-tokenizer special-text index.  For scale, the TokenSet lowering's own scan
(``lower_token_sets``), the walk this step lets the compiler skip when a grammar has no token
element (the step before this change).  XGrammar (when installed) compiles the same
schemas in the same run, for scale.  Prints a table and writes
``bench/results/special_literals.json``; no assertions.

Usage:  python bench/bench_special_literals.py [--schemas 150]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
import warnings

import xmask
from xmask.compiler.special_literals import (allow_special_literals, special_texts,
                                             with_special_literals)
from xmask.compiler.token_rules import lower_token_sets

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "bench" / "results" / "special_literals.json"
TOKENIZERS = {"o200k": "gpt-oss-o200k", "llama3": "llama3"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def sample_schemas(n):
    files = sorted((DATA / "maskbench").glob("*.json"))
    files = [files[i * len(files) // n] for i in range(min(n, len(files)))]
    out = []
    for f in files:
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        try:
            out.append((f.name, schema, xmask.Grammar.from_json_schema(schema)))
        except Exception:  # noqa: BLE001 (unsupported schemas are not what this measures)
            continue
    return out


def clock(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schemas", type=int, default=150)
    args = ap.parse_args()
    schemas = sample_schemas(args.schemas)
    results = {}
    for short, folder in TOKENIZERS.items():
        path = DATA / "tokenizers" / folder / "tokenizer.json"
        info = xmask.TokenizerInfo.from_huggingface(str(path))
        index_s = clock(lambda: special_texts(info))
        compiler = xmask.GrammarCompiler(info, cache_enabled=False)
        grammars = [(name, g) for name, _, g in schemas]
        for model in ("harmony", "kimi"):
            g = xmask.Grammar.from_structural_tag(xmask.get_model_structural_tag(model, TOOLS))
            grammars.append((model, g))
        rewrite = compile_s = 0.0
        touched = compiled = 0
        token_scan = 0.0  # the existing TokenSet scan, a walk of the same size, for scale
        for name, g in grammars:
            try:
                c = clock(lambda: compiler.compile_grammar(g))
            except xmask.XmaskError:  # an unsatisfiable schema: nothing to compare
                continue
            compile_s += c
            rewrite += clock(lambda: with_special_literals(g, info))
            token_scan += clock(lambda: lower_token_sets(g, info))
            touched += allow_special_literals(g, info) is not g
            compiled += 1
        # the same compiles with the step switched off (the TokenSet lowering scans instead)
        import xmask.compiler.compiled as cmod
        cmod.with_special_literals = lambda g, i: (g, True)
        try:
            before = 0.0
            for name, g in grammars:
                try:
                    before += clock(lambda: compiler.compile_grammar(g))
                except xmask.XmaskError:
                    continue
        finally:
            cmod.with_special_literals = with_special_literals
        row = {"grammars": compiled, "compile_ms_total_step_off": before * 1e3, "rewritten": touched,
               "index_build_ms": index_s * 1e3, "rewrite_ms_total": rewrite * 1e3,
               "compile_ms_total": compile_s * 1e3,
               "token_set_scan_ms_total": token_scan * 1e3,
               "rewrite_share_pct": 100 * rewrite / compile_s}
        try:
            import xgrammar as xgr
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xinfo = xgr.TokenizerInfo.from_huggingface(
                    __import__("transformers").PreTrainedTokenizerFast(tokenizer_file=str(path)))
                xc = xgr.GrammarCompiler(xinfo, cache_enabled=False)
                xs = 0.0
                for _, schema, _ in schemas:
                    try:
                        xs += clock(lambda: xc.compile_json_schema(json.dumps(schema)))
                    except RuntimeError:  # a schema XGrammar refuses
                        continue
            row["xgrammar_compile_ms_total_schemas"] = xs * 1e3
        except Exception as e:  # noqa: BLE001 (peer missing or refusing a schema)
            row["xgrammar"] = f"skipped: {type(e).__name__}"
        results[short] = row
        print(f"{short:7s} grammars={row['grammars']} rewritten={touched} "
              f"index={row['index_build_ms']:.2f} ms rewrite={row['rewrite_ms_total']:.1f} ms "
              f"(TokenSet scan {token_scan * 1e3:.1f} ms) "
              f"compile={row['compile_ms_total']:.0f} ms (step off {before * 1e3:.0f} ms) share={row['rewrite_share_pct']:.2f}% "
              f"xgrammar={row.get('xgrammar_compile_ms_total_schemas', float('nan')):.0f} ms")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
