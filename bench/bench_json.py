#!/usr/bin/env python
"""Side-by-side benchmark: built-in JSON grammar, Llama-3 tokenizer, MaskBench valid instances.

Engines: xmask, xgrammar, llguidance.  Any engine whose import (or setup) fails is skipped with
the reason printed.  For each engine, in the same process, it measures:

* tokenizer init time, grammar compile time (cold, fresh compiler each repetition),
  matcher creation time, compiled-grammar / cache memory where the engine reports it;
* per-token mask time (fill_next_token_bitmask) while walking valid MaskBench instances
  (mean, p50, p99, max);
* per-token accept time;
* rollback cost: after each accepted token, rollback(1) then re-accept the same token
  (both timed, per call).

Sanity check while walking: every token of a valid instance must be allowed by the engine's
mask and accepted, and the stop token must be allowed and accepted at the end.  Violations are
counted per engine and printed (they reveal bugs in an engine, or grammar differences).

Timing uses time.perf_counter_ns.  Nothing here asserts on timings.

Usage:  python bench/bench_json.py [--docs 200] [--data PATH] [--engines xmask,xgrammar,llguidance]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import platform
import sys
import time
from importlib import metadata

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_DATA = pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "bench" / "results" / "bench_json.json"
GRAMMAR_NAME = "builtin_json"
ENGINE_ORDER = ("xmask", "xgrammar", "llguidance")

# llguidance has no "builtin JSON grammar".  Two equivalents of XGrammar's builtin one (root is an
# object or an array, any JSON inside, whitespace between tokens but not before/after the root):
#  * "lark" (default): a plain Lark CFG for JSON -- the same language as XGrammar's builtin
#    grammar, including every \uXXXX escape;
#  * "json": llguidance's native JSON path (%json with a schema).  Its string lexer only accepts
#    \uXXXX escapes of control characters (U+0000-U+001F, U+007F), so json.dumps() output with
#    escaped non-ASCII characters (e.g. "\u00fc") is rejected: such instances show up as
#    violations that are a grammar difference, not a mask bug.
LLG_GRAMMARS = {
    "lark": r'''
start: object | array
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" (pair ("," pair)*)? "}"
pair: STRING ":" value
array: "[" (value ("," value)*)? "]"
STRING: /"([^"\\\x00-\x1f]|\\(["\\\/bfnrt]|u[0-9a-fA-F]{4}))*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
%ignore /[ \t\n\r]+/
''',
    "json": 'start: %json {"type": ["object", "array"]}',
}
LLG_GRAMMAR = LLG_GRAMMARS["lark"]  # overridden by --llg-grammar

perf = time.perf_counter_ns


# ----------------------------------------------------------------------------------------------
# helpers


def _version(dist: str):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _stats_us(ns: list[int]) -> dict:
    if not ns:
        return {"n": 0, "mean": None, "p50": None, "p99": None, "max": None}
    a = np.asarray(ns, dtype=np.float64) / 1e3
    return {
        "n": int(a.size),
        "mean": float(a.mean()),
        "p50": float(np.percentile(a, 50)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
    }


def _bit_is_set(words: np.ndarray, tid: int) -> bool:
    return bool((int(words[tid >> 5]) >> (tid & 31)) & 1)


def _err(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[-1][:300] if msg else ''}"


# ----------------------------------------------------------------------------------------------
# engines.  Each adapter exposes: setup(), new_matcher(), fill(m), allowed(tid), accept(m, t),
# rollback(m, n), memory dict.  fill() writes into the adapter's own bitmask (row 0).


class Engine:
    name = "?"

    def __init__(self, tok, tok_path: pathlib.Path, vocab_size: int, stop_id: int, reps: int):
        self.tok = tok
        self.tok_path = tok_path
        self.vocab_size = vocab_size
        self.stop_id = stop_id
        self.reps = reps
        self.setup_ns: dict[str, list[int]] = {"tokenizer_init": [], "compile": []}
        self.memory: dict[str, int | None] = {}
        self.notes: list[str] = []

    def allowed(self, tid: int) -> bool:
        return _bit_is_set(self.words, tid)


class XGrammarLike(Engine):
    """xgrammar and xmask share the API."""

    mod = None
    compiler_options: dict = {}  # extra GrammarCompiler keywords (xmask: --xmask-precompute)

    def make_tokenizer_info(self):
        raise NotImplementedError

    def setup(self):
        mod = self.mod
        t0 = perf()
        self.info = self.make_tokenizer_info()
        self.setup_ns["tokenizer_init"].append(perf() - t0)
        self.compiled = None
        for _ in range(self.reps):
            compiler = mod.GrammarCompiler(self.info, **self.compiler_options)
            t0 = perf()
            compiled = compiler.compile_builtin_json_grammar()
            self.setup_ns["compile"].append(perf() - t0)
            if self.compiled is None:
                self.compiler, self.compiled = compiler, compiled
        # cached re-compile on the same compiler
        t0 = perf()
        self.compiler.compile_builtin_json_grammar()
        self.setup_ns["compile_cached"] = [perf() - t0]
        self.memory["compiled_grammar_bytes"] = _maybe_int(getattr(self.compiled, "memory_size_bytes", None))
        get_cache = getattr(self.compiler, "get_cache_size_bytes", None)
        self.memory["compiler_cache_bytes"] = _maybe_int(get_cache() if callable(get_cache) else None)
        self.bitmask = mod.allocate_token_bitmask(1, self.vocab_size)
        self.words = self._words_view(self.bitmask)

    @staticmethod
    def _words_view(bitmask) -> np.ndarray:
        arr = bitmask.numpy() if hasattr(bitmask, "numpy") and not isinstance(bitmask, np.ndarray) else bitmask
        arr = np.asarray(arr)
        assert arr.dtype == np.int32, arr.dtype
        return arr[0]  # a view sharing memory with the bitmask

    def new_matcher(self):
        return self.mod.GrammarMatcher(self.compiled)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bitmask, 0)

    def accept(self, m, tid: int) -> bool:
        return bool(m.accept_token(tid))

    def rollback(self, m, n: int):
        m.rollback(n)


def _maybe_int(x):
    try:
        return None if x is None else int(x)
    except (TypeError, ValueError):
        return None


class XmaskEngine(XGrammarLike):
    name = "xmask"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        import xmask  # noqa: F401  (ImportError -> engine skipped)

        self.mod = xmask

    def make_tokenizer_info(self):
        return self.mod.TokenizerInfo.from_huggingface(self.tok, vocab_size=self.vocab_size, stop_token_ids=[self.stop_id])


class XGrammarEngine(XGrammarLike):
    name = "xgrammar"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        import xgrammar

        self.mod = xgrammar

    def make_tokenizer_info(self):
        # Equivalent to TokenizerInfo.from_huggingface(...) without needing transformers:
        # the byte-level encoded vocab ordered by id (verified identical decoded vocab/metadata).
        xgr = self.mod
        vocab = self.tok.get_vocab(with_added_tokens=True)
        enc = [""] * self.vocab_size
        for s, i in vocab.items():
            if i < self.vocab_size:
                enc[i] = s
        return xgr.TokenizerInfo(
            enc, vocab_type=xgr.VocabType.BYTE_LEVEL, vocab_size=self.vocab_size, stop_token_ids=[self.stop_id]
        )


class LLGuidanceEngine(Engine):
    name = "llguidance"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        import llguidance
        import llguidance.numpy as llg_np

        self.llg, self.llg_np = llguidance, llg_np

    def setup(self):
        llg = self.llg
        t0 = perf()
        # LLTokenizer accepts a tokenizer.json path (or its JSON text, e.g. tokenizers.Tokenizer.to_str());
        # this is what llguidance.hf.from_tokenizer does without transformers.
        self.lltok = llg.LLTokenizer(str(self.tok_path), n_vocab=self.vocab_size, eos_token=self.stop_id)
        self.setup_ns["tokenizer_init"].append(perf() - t0)
        # llguidance compiles the grammar when the matcher is constructed (lexer built lazily).
        self.template = None
        for _ in range(self.reps):
            t0 = perf()
            m = llg.LLMatcher(self.lltok, LLG_GRAMMAR, log_level=0)
            self.setup_ns["compile"].append(perf() - t0)
            if m.is_error():
                raise RuntimeError("llguidance grammar error: " + m.get_error())
            if self.template is None:
                self.template = m
        self.memory["compiled_grammar_bytes"] = None  # not reported by llguidance
        self.memory["compiler_cache_bytes"] = None
        self.notes.append("compile = LLMatcher construction (grammar in llguidance_grammar); "
                          "matcher init = template.deep_copy()")
        self.bitmask = self.llg_np.allocate_token_bitmask(1, self.vocab_size)
        self.words = self.bitmask[0]

    def new_matcher(self):
        # compile once, then a cheap per-request copy (the analogue of GrammarMatcher(compiled));
        # the copy shares the compiled grammar and lexer.  Constructing a new LLMatcher per
        # request would recompile (see "compile" times).
        return self.template.deep_copy()

    def fill(self, m):
        self.llg_np.fill_next_token_bitmask(m, self.bitmask, 0)

    def accept(self, m, tid: int) -> bool:
        return bool(m.consume_token(tid))

    def rollback(self, m, n: int):
        m.rollback(n)


ENGINES = {"xmask": XmaskEngine, "xgrammar": XGrammarEngine, "llguidance": LLGuidanceEngine}


# ----------------------------------------------------------------------------------------------
# data


def xmask_llama3(data: pathlib.Path):
    """xmask on the Llama-3 tokenizer, as the xmask-only scripts use it: ``(xmask, info,
    compiler, bitmask)`` with the compile cache off (each compile is a cold one)."""
    import xmask
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(data / "tokenizers" / "llama3" / "tokenizer.json"))
    info = xmask.TokenizerInfo.from_huggingface(tok, vocab_size=128256, stop_token_ids=[128009])
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    return xmask, info, compiler, xmask.allocate_token_bitmask(1, info.vocab_size)


def load_docs(maskbench: pathlib.Path, tok, n_docs: int):
    """Deterministic sample: one valid object/array instance per file, files taken with a
    stride k = n_files // n_docs (offsets 0, 1, ... k-1 until n_docs are found).

    The builtin JSON grammar (XGrammar's) only accepts an object or an array at the root, so
    valid instances whose data is a bare string/number/bool/null are not used.
    """
    files = sorted(maskbench.glob("*.json"))
    if not files:
        raise SystemExit(f"no MaskBench files in {maskbench}")
    k = max(1, len(files) // max(1, n_docs))
    docs, seen = [], set()
    for off in range(k):
        for f in files[off::k]:
            if len(docs) >= n_docs:
                break
            if f in seen:
                continue
            seen.add(f)
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for t in d.get("tests", []):
                if t.get("valid") and isinstance(t.get("data"), (dict, list)):
                    text = json.dumps(t["data"])
                    ids = tok.encode(text, add_special_tokens=False).ids
                    if ids:
                        docs.append({"file": f.name, "text": text, "ids": ids})
                    break
        if len(docs) >= n_docs:
            break
    return docs


# ----------------------------------------------------------------------------------------------
# walking


def walk(engine: Engine, docs, do_rollback: bool, max_print: int):
    fill_ns, accept_ns, rb_ns, reacc_ns, rb_total_ns, init_ns = [], [], [], [], [], []
    violations = {"mask_disallows_token": 0, "accept_failed": 0, "stop_not_allowed": 0,
                  "stop_accept_failed": 0, "rollback_reaccept_failed": 0, "exceptions": 0}
    examples = []

    def note(kind, doc, pos, extra=""):
        violations[kind] += 1
        if len(examples) < max_print:
            tid = doc["ids"][pos] if 0 <= pos < len(doc["ids"]) else None
            tokstr = engine.tok.id_to_token(tid) if tid is not None else None
            examples.append(f"{kind}: {doc['file']} token#{pos} id={tid} {tokstr!r} {extra}")

    fill, accept, rollback, allowed = engine.fill, engine.accept, engine.rollback, engine.allowed
    stop = engine.stop_id
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for doc in docs:
            t0 = perf()
            m = engine.new_matcher()
            init_ns.append(perf() - t0)
            ids = doc["ids"]
            pos = -1
            try:
                ok = True
                for pos, tid in enumerate(ids):
                    t0 = perf()
                    fill(m)
                    t1 = perf()
                    fill_ns.append(t1 - t0)
                    if not allowed(tid):
                        note("mask_disallows_token", doc, pos)
                    t0 = perf()
                    r = accept(m, tid)
                    t1 = perf()
                    accept_ns.append(t1 - t0)
                    if not r:
                        note("accept_failed", doc, pos)
                        ok = False
                        break
                    if do_rollback:
                        t0 = perf()
                        rollback(m, 1)
                        t1 = perf()
                        r = accept(m, tid)
                        t2 = perf()
                        rb_ns.append(t1 - t0)
                        reacc_ns.append(t2 - t1)
                        rb_total_ns.append(t2 - t0)
                        if not r:
                            note("rollback_reaccept_failed", doc, pos)
                            ok = False
                            break
                if ok:
                    pos = len(ids)
                    t0 = perf()
                    fill(m)
                    fill_ns.append(perf() - t0)
                    if not allowed(stop):
                        note("stop_not_allowed", doc, pos)
                    if not accept(m, stop):
                        note("stop_accept_failed", doc, pos)
            except Exception as e:  # an engine bug must not kill the whole benchmark
                note("exceptions", doc, pos, _err(e))
    finally:
        if gc_was:
            gc.enable()
    return {
        "matcher_init_us": _stats_us(init_ns),
        "mask_us": _stats_us(fill_ns),
        "accept_us": _stats_us(accept_ns),
        "rollback1_us": _stats_us(rb_ns),
        "reaccept_us": _stats_us(reacc_ns),
        "rollback1_plus_reaccept_us": _stats_us(rb_total_ns),
        "tokens": int(sum(len(d["ids"]) for d in docs)),
        "violations": violations,
        "violation_examples": examples,
    }


# ----------------------------------------------------------------------------------------------
# report


ROWS = [
    # (label, getter)
    ("tokenizer init (ms)", lambda r: _ms(r["setup_ns"]["tokenizer_init"], "first")),
    ("compile, cold first (ms)", lambda r: _ms(r["setup_ns"]["compile"], "first")),
    ("compile, cold median (ms)", lambda r: _ms(r["setup_ns"]["compile"], "median")),
    ("compile, cached (ms)", lambda r: _ms(r["setup_ns"].get("compile_cached", []), "first")),
    ("compiled grammar memory (KiB)", lambda r: _kib(r["memory"].get("compiled_grammar_bytes"))),
    ("compiler cache memory (KiB)", lambda r: _kib(r["memory"].get("compiler_cache_bytes"))),
    ("matcher init mean (us)", lambda r: r["walk"]["matcher_init_us"]["mean"]),
    ("mask mean (us)", lambda r: r["walk"]["mask_us"]["mean"]),
    ("mask p50 (us)", lambda r: r["walk"]["mask_us"]["p50"]),
    ("mask p99 (us)", lambda r: r["walk"]["mask_us"]["p99"]),
    ("mask max (us)", lambda r: r["walk"]["mask_us"]["max"]),
    ("accept mean (us)", lambda r: r["walk"]["accept_us"]["mean"]),
    ("accept p50 (us)", lambda r: r["walk"]["accept_us"]["p50"]),
    ("accept p99 (us)", lambda r: r["walk"]["accept_us"]["p99"]),
    ("accept max (us)", lambda r: r["walk"]["accept_us"]["max"]),
    ("rollback(1) mean (us)", lambda r: r["walk"]["rollback1_us"]["mean"]),
    ("rollback(1)+re-accept mean (us)", lambda r: r["walk"]["rollback1_plus_reaccept_us"]["mean"]),
    ("rollback(1)+re-accept p99 (us)", lambda r: r["walk"]["rollback1_plus_reaccept_us"]["p99"]),
    ("violations (total)", lambda r: int(sum(r["walk"]["violations"].values()))),
]


def _ms(ns_list, which):
    if not ns_list:
        return None
    if which == "first":
        return ns_list[0] / 1e6
    return float(np.median(ns_list)) / 1e6


def _kib(b):
    return None if b is None else b / 1024


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, int):
        return str(v)
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def print_table(results: dict):
    header = ["metric", *ENGINE_ORDER, "xgrammar/xmask", "llguidance/xmask"]
    rows = []
    for label, get in ROWS:
        vals = {}
        for e in ENGINE_ORDER:
            r = results.get(e)
            try:
                vals[e] = get(r) if r and "walk" in r else None
            except (KeyError, TypeError):
                vals[e] = None
        rows.append([label, *[_fmt(vals[e]) for e in ENGINE_ORDER],
                     _ratio(vals["xgrammar"], vals["xmask"]), _ratio(vals["llguidance"], vals["xmask"])])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join([str(r[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(r[1:], widths[1:])]))


# ----------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=200, help="number of MaskBench valid instances (default 200)")
    ap.add_argument("--data", type=pathlib.Path, default=DEFAULT_DATA,
                    help="shared data dir (default $XMASK_DATA or ../shared/data from the repo root)")
    ap.add_argument("--engines", default=",".join(ENGINE_ORDER), help="comma-separated subset of engines")
    ap.add_argument("--compile-reps", type=int, default=3, help="cold compile repetitions (fresh compiler each)")
    ap.add_argument("--no-rollback", action="store_true", help="skip the rollback(1)+re-accept measurement")
    ap.add_argument("--max-print", type=int, default=10, help="violation examples to print per engine")
    ap.add_argument("--llg-grammar", choices=sorted(LLG_GRAMMARS), default="lark",
                    help="llguidance grammar: 'lark' (JSON CFG, same language as the builtin) or 'json' (%%json)")
    ap.add_argument("--xmask-precompute", action="store_true",
                    help="xmask GrammarCompiler(precompute=True): classify every state at compile (default: "
                         "lazy, the first fills that meet a state classify it)")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="JSON result file")
    args = ap.parse_args(argv)
    if args.xmask_precompute:
        XmaskEngine.compiler_options = {"precompute": True}
    global LLG_GRAMMAR
    LLG_GRAMMAR = LLG_GRAMMARS[args.llg_grammar]

    from tokenizers import Tokenizer

    tok_path = args.data / "tokenizers" / "llama3" / "tokenizer.json"
    if not tok_path.exists():
        raise SystemExit(f"tokenizer not found: {tok_path} (set --data or XMASK_DATA)")
    tok = Tokenizer.from_file(str(tok_path))
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    stop_id = None
    cfg = tok_path.parent / "tokenizer_config.json"
    if cfg.exists():
        eos = json.loads(cfg.read_text(encoding="utf-8")).get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if eos:
            stop_id = tok.token_to_id(eos)
    if stop_id is None:
        stop_id = tok.token_to_id("<|eot_id|>")

    t0 = time.perf_counter()
    docs = load_docs(args.data / "maskbench", tok, args.docs)
    print(f"data: {args.data}  docs={len(docs)} tokens={sum(len(d['ids']) for d in docs)} "
          f"vocab={vocab_size} stop={stop_id} (loaded in {time.perf_counter() - t0:.1f}s)")

    results: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    wanted = [e.strip() for e in args.engines.split(",") if e.strip()]
    for name in ENGINE_ORDER:
        if name not in wanted:
            continue
        try:
            eng = ENGINES[name](tok, tok_path, vocab_size, stop_id, max(1, args.compile_reps))
        except Exception as e:  # ImportError and friends
            skipped[name] = "import failed: " + _err(e)
            print(f"[{name}] skipped: {skipped[name]}")
            continue
        try:
            eng.setup()
        except Exception as e:
            skipped[name] = "setup failed: " + _err(e)
            print(f"[{name}] skipped: {skipped[name]}")
            continue
        t0 = time.perf_counter()
        w = walk(eng, docs, not args.no_rollback, args.max_print)
        n_viol = sum(w["violations"].values())
        print(f"[{name}] walked {len(docs)} docs / {w['tokens']} tokens in {time.perf_counter() - t0:.1f}s; "
              f"violations: {n_viol} {w['violations'] if n_viol else ''}")
        for ex in w["violation_examples"]:
            print(f"    {ex}")
        results[name] = {"setup_ns": eng.setup_ns, "memory": eng.memory, "walk": w, "notes": eng.notes}

    print()
    print_table(results)
    for k, v in skipped.items():
        print(f"note: {k} skipped ({v})")

    try:
        import Cython

        cython_version = Cython.__version__
    except ImportError:
        cython_version = None
    out = {
        "benchmark": "bench_json",
        "grammar": GRAMMAR_NAME,
        "llguidance_grammar_kind": args.llg_grammar,
        "llguidance_grammar": LLG_GRAMMAR,
        "tokenizer": str(tok_path),
        "vocab_size": vocab_size,
        "stop_token_id": stop_id,
        "docs": len(docs),
        "tokens": int(sum(len(d["ids"]) for d in docs)),
        "rollback_measured": not args.no_rollback,
        "units": {"*_us": "microseconds per call", "setup_ns": "nanoseconds", "memory": "bytes"},
        "hardware": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_model": _cpu_model(),
            "cores": os.cpu_count(),
        },
        "software": {
            "python": platform.python_version(),
            "cython": cython_version,
            "numpy": np.__version__,
            "tokenizers": _version("tokenizers"),
            "torch": _version("torch"),
            "xmask": _version("xmask"),
            "xgrammar": _version("xgrammar"),
            "llguidance": _version("llguidance"),
            "outlines-core": _version("outlines-core"),
        },
        "skipped": skipped,
        "results": results,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
