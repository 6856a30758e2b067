#!/usr/bin/env python
"""Side-by-side benchmark: MaskBench JSON schemas, Llama-3 tokenizer, xmask vs XGrammar vs llguidance.

All engines run in one process on the same deterministic sample of MaskBench files
(``<data>/maskbench/*.json``, each ``{"schema", "tests": [{"valid", "data"}], "meta"}``).  For
every schema, one engine after the other:

* compile, cold (no compiled-grammar cache): xmask / XGrammar
  ``GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema, strict_mode=False,
  any_whitespace=True)`` (xmask gets the dict, XGrammar the JSON text); llguidance
  ``LLMatcher(tokenizer, LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible":
  True}))``.  An exception (llguidance: a matcher in error state) makes the schema "unsupported"
  for that engine, a compile longer than ``--compile-timeout`` makes it "timeout" (interrupted by
  SIGALRM where the engine runs Python code, otherwise recorded when the native call returns);
* first mask: a matcher on the fresh grammar and one ``fill_next_token_bitmask`` (llguidance
  builds its lexer lazily, and xmask's lazy cache classifies states on demand, so part of the
  compile work shows up here); time to first mask (TTFM) = compile + matcher + first fill;
* per-token mask time while walking the schema's VALID instances (``json.dumps(data)`` tokenized
  without special tokens): fill before each token and once at the end, only the fill is timed;
  each token is checked against the mask and accepted, then the stop token must be allowed and
  accepted.  Two passes with new matchers on the same compiled grammar: the FIRST PASS meets
  states no fill has classified yet (the price of a lazy cache: xmask lazy, llguidance), the
  SECOND PASS shows the steady state;
* INVALID instances: accept only (no mask); an instance whose tokens and stop token are all
  accepted is "wrongly accepted" (the engine is looser than the schema).

Timing uses time.perf_counter_ns around the Python call.  Nothing here asserts on timings.

xmask runs as "xmask" (the default, lazy compiler) and/or "xmask-eager"
(``GrammarCompiler(info, cache_enabled=False, precompute=True)``: every state classified before
compile returns); ``--xmask-mode lazy|precompute|both`` picks.  On an xmask without the
``precompute`` option both are the same eager compiler.

Usage:  python bench/bench_json_schema.py [--schemas 300] [--data PATH] [--engines xmask,xgrammar,llguidance]
                                          [--xmask-mode lazy|precompute|both]
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import pathlib
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402  -- engine adapters and helpers shared with the JSON bench
from json_schema_report import PEERS, PHASES, XMASK_VARIANTS, report  # noqa: E402

DEFAULT_OUT = bj.REPO / "bench" / "results" / "bench_json_schema.json"
ENGINE_ORDER = (*XMASK_VARIANTS, *PEERS)
WARMUP_SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
LLG_JSON_OPTIONS = {"whitespace_flexible": True}
XMASK_OPTIONS = {"strict_mode": False, "any_whitespace": True}  # --lenient adds lenient=True

perf = time.perf_counter_ns


# ----------------------------------------------------------------------------------------------
# engines: the adapters of bench_json (tokenizer info, fill, accept, allowed) plus
# prepare() / compile(schema, text) / first_matcher() / release() for one schema at a time.


class EngineGrammarError(RuntimeError):
    """An engine reported a grammar error without raising (llguidance's error state)."""


class _CompilerPerSchema:
    """For the engines with XGrammar's API: one compiler with the cache disabled."""

    compiled = None
    compiler_options: dict = {}
    max_threads = None  # None: the engine's default

    def prepare(self):
        self.info = self.make_tokenizer_info()
        opts = dict(self.compiler_options)
        if self.max_threads is not None:
            opts["max_threads"] = self.max_threads
        self.compiler = self.mod.GrammarCompiler(self.info, cache_enabled=False, **opts)
        self.bitmask = self.mod.allocate_token_bitmask(1, self.vocab_size)
        self.words = self._words_view(self.bitmask)
        text = "".join(f", {k}={v!r}" for k, v in opts.items())
        self.notes.append(f"GrammarCompiler(info, cache_enabled=False{text})"
                          + ("" if "max_threads" in opts else ", default max_threads"))

    def first_matcher(self):
        return self.new_matcher()

    def memory_bytes(self):
        return bj._maybe_int(getattr(self.compiled, "memory_size_bytes", None))

    def cache_summary(self):
        """The lazy cache's counters (classified / pending states), where the engine has them."""
        get = getattr(self.compiled, "cache_summary", None)
        return dict(get()) if callable(get) else None

    def release(self):
        self.compiled = None


def xmask_has_precompute() -> bool | None:
    """True once xmask's GrammarCompiler has the ``precompute`` option (the lazy cache); None
    when xmask cannot be imported."""
    import inspect

    try:
        import xmask
    except ImportError:
        return None
    return "precompute" in inspect.signature(xmask.GrammarCompiler.__init__).parameters


class _PhaseClock:
    """Splits xmask's compile into schema -> Grammar, automaton and mask cache, cheaply:
    ``CompiledGrammar.compile_seconds`` is the Grammar -> CompiledGrammar part, and the eager
    classification the compiled module calls (``build_mask_cache`` before the lazy cache,
    ``precompute_mask_cache`` after it), where it exists, is wrapped with a timer."""

    mask_cache_ns = 0
    calls = 0
    installed = False

    @classmethod
    def install(cls):
        if cls.installed:
            return
        cls.installed = True
        try:
            from xmask.compiler import compiled as mod
        except ImportError:
            return
        for name in ("build_mask_cache", "precompute_mask_cache"):  # before / after the lazy cache
            inner = getattr(mod, name, None)
            if callable(inner):
                setattr(mod, name, cls._timed(inner))

    @classmethod
    def _timed(cls, inner):
        def timed(*a, **k):
            t0 = perf()
            try:
                return inner(*a, **k)
            finally:
                cls.mask_cache_ns += perf() - t0
                cls.calls += 1

        return timed


class XmaskSchema(_CompilerPerSchema, bj.XmaskEngine):
    name = "xmask"

    def prepare(self):
        _PhaseClock.install()
        super().prepare()
        if os.environ.get("XMASK_BENCH_ONE_PART") == "1":  # A/B: JSON schemas compiled whole
            from xmask.compiler.grammar_compiler import set_two_part_schemas

            set_two_part_schemas(False)
            self.notes.append("XMASK_BENCH_ONE_PART=1: set_two_part_schemas(False)")

    def compile(self, schema, text):
        _PhaseClock.mask_cache_ns = _PhaseClock.calls = 0
        self.compiled = self.compiler.compile_json_schema(schema, **XMASK_OPTIONS)
        rest = getattr(self.compiled, "_rest", None)  # a schema compiled in two parts
        self.first_part = None if rest is None else rest.first

    def wait_rest(self) -> None:
        """Wait until the whole grammar of a two-part compile is built (by the background
        worker after the first fill, or here)."""
        if self.first_part is not None:
            self.compiled._resolved()

    def lazy_record(self) -> dict:
        """After the first mask: whether the schema was compiled in two parts, whether the
        first part gave the first mask (no token entered a pending rule), and how long the
        whole grammar's build took (the background thread's, waited for here)."""
        if self.first_part is None:
            return {"two_parts": False}
        served = not self.first_part[0].stub_hit
        t0 = perf()
        self.compiled._resolved()
        return {"two_parts": True, "first_part_served": served,
                "rest_build_ms": self.compiled._rest.build_seconds * 1e3,
                "rest_wait_ms": (perf() - t0) / 1e6}

    def phases_ms(self, compile_ms: float) -> dict:
        """schema -> Grammar (incl. the compiler's own overhead) and Grammar -> CompiledGrammar,
        the latter split into automaton and eager mask cache when the timer saw the cache built."""
        build_s = getattr(self.compiled, "compile_seconds", None)
        if build_s is None:
            return {}
        build_ms = float(build_s) * 1e3
        out = {"schema_to_grammar_ms": max(0.0, compile_ms - build_ms), "grammar_to_compiled_ms": build_ms}
        if _PhaseClock.calls:
            cache_ms = _PhaseClock.mask_cache_ns / 1e6
            out.update(automaton_ms=max(0.0, build_ms - cache_ms), mask_cache_ms=cache_ms)
        return out


class XmaskEagerSchema(XmaskSchema):
    """Warm-up mode: every state classified before compile returns (today's only mode)."""

    name = "xmask-eager"

    def prepare(self):
        self.compiler_options = {"precompute": True} if xmask_has_precompute() else {}
        super().prepare()
        if not self.compiler_options:
            self.notes.append("this xmask has no precompute option: its default compiler is eager")


class XGrammarSchema(_CompilerPerSchema, bj.XGrammarEngine):
    def compile(self, schema, text):
        self.compiled = self.compiler.compile_json_schema(text, strict_mode=False, any_whitespace=True)


class LLGuidanceSchema(bj.LLGuidanceEngine):
    template = None

    def prepare(self):
        self.lltok = self.llg.LLTokenizer(str(self.tok_path), n_vocab=self.vocab_size, eos_token=self.stop_id)
        self.bitmask = self.llg_np.allocate_token_bitmask(1, self.vocab_size)
        self.words = self.bitmask[0]
        self.notes.append(f"compile = grammar_from_json_schema(schema, defaults={LLG_JSON_OPTIONS}) + "
                          "LLMatcher(); first mask on that matcher; instances use template.deep_copy()")

    def compile(self, schema, text):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(schema, defaults=LLG_JSON_OPTIONS)
        m = self.llg.LLMatcher(self.lltok, grammar, log_level=0)
        if m.is_error():
            raise EngineGrammarError(m.get_error())
        self.template = m

    def first_matcher(self):
        return self.template  # the freshly constructed matcher: its first mask builds the lexer

    def memory_bytes(self):
        return None

    def cache_summary(self):
        return None

    def release(self):
        self.template = None


ENGINES = {"xmask": XmaskSchema, "xmask-eager": XmaskEagerSchema, "xgrammar": XGrammarSchema,
           "llguidance": LLGuidanceSchema}


def engines_wanted(engines_arg: str, xmask_mode: str) -> list[str]:
    """--engines with "xmask" expanded by --xmask-mode (lazy: xmask, precompute: xmask-eager,
    both: the two), in ENGINE_ORDER."""
    wanted = {e.strip() for e in engines_arg.split(",") if e.strip()}
    unknown = wanted - set(ENGINES)
    if unknown:
        raise SystemExit(f"unknown engines {sorted(unknown)}; choose from {list(ENGINES)}")
    if "xmask" in wanted and xmask_mode != "lazy":
        wanted.add("xmask-eager")
        if xmask_mode == "precompute":
            wanted.discard("xmask")
    return [e for e in ENGINE_ORDER if e in wanted]


# ----------------------------------------------------------------------------------------------
# data


def collection_of(name: str) -> str:
    return re.split(r"---|_", name, maxsplit=1)[0]


def sample_files(maskbench: pathlib.Path, n: int) -> list[pathlib.Path]:
    """n files evenly strided over the sorted list (index floor(i * n_files / n)); n <= 0: all."""
    files = sorted(maskbench.glob("*.json"))
    if not files:
        raise SystemExit(f"no MaskBench files in {maskbench}")
    if n <= 0 or n >= len(files):
        return files
    return [files[i * len(files) // n] for i in range(n)]


def compile_sample(xmask, compiler, maskbench: pathlib.Path, n: int, on_file=None) -> None:
    """Compile the ``sample_files`` schemas with :data:`XMASK_OPTIONS`, skipping those xmask
    refuses (``xmask.XmaskError``); ``on_file(name)`` runs before each one (for the spies of
    the tools that capture what a compile calls)."""
    for f in sample_files(maskbench, n):
        if on_file is not None:
            on_file(f.name)
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        try:
            compiler.compile_json_schema(schema, **XMASK_OPTIONS)
        except xmask.XmaskError:
            pass


def load_schemas(files, tok, max_instances: int) -> list[dict]:
    out = []
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        item = {"file": f.name, "collection": collection_of(f.name), "schema": d["schema"],
                "text": json.dumps(d["schema"]), "valid": [], "invalid": []}
        for t in d.get("tests", []):
            kind = "valid" if t.get("valid") else "invalid"
            if len(item[kind]) < max_instances:
                item[kind].append(tok.encode(json.dumps(t["data"]), add_special_tokens=False).ids)
        out.append(item)
    return out


def stop_token_id(tok, tok_path: pathlib.Path) -> int:
    cfg = tok_path.parent / "tokenizer_config.json"
    eos = json.loads(cfg.read_text(encoding="utf-8")).get("eos_token") if cfg.exists() else None
    eos = eos.get("content") if isinstance(eos, dict) else eos
    tid = tok.token_to_id(eos) if eos else None
    return tok.token_to_id("<|eot_id|>") if tid is None else tid


# ----------------------------------------------------------------------------------------------
# compile with a time limit, capturing what native code writes to stderr (XGrammar warnings)


class CompileTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CompileTimeout()


def timed_compile(eng, item, limit_s: float):
    """Returns (elapsed_ns, exception or None, captured stderr text)."""
    sys.stderr.flush()
    saved = os.dup(2)
    err = None
    with tempfile.TemporaryFile() as cap:
        os.dup2(cap.fileno(), 2)
        old = signal.signal(signal.SIGALRM, _alarm)
        t0 = perf()
        try:
            if limit_s > 0:
                signal.setitimer(signal.ITIMER_REAL, limit_s)
            eng.compile(item["schema"], item["text"])
        except Exception as e:  # unsupported schema, engine error or CompileTimeout
            err = e
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            elapsed = perf() - t0
            signal.signal(signal.SIGALRM, old)
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        cap.seek(0)
        captured = cap.read().decode("utf-8", "replace")
    return elapsed, err, captured


# ----------------------------------------------------------------------------------------------
# walking


def walk_valid(eng, ids, fills: list[int]) -> dict:
    """Mask (timed) + check + accept each token, then the stop token.  Appends fill times."""
    fill, accept, allowed = eng.fill, eng.accept, eng.allowed
    seq = [*ids, eng.stop_id]
    res = {"accepted": False, "mask_disallows_token": 0, "stop_not_allowed": 0, "rejected_at": None,
           "first_disallowed": None}
    m = eng.new_matcher()
    for pos, tid in enumerate(seq):
        t0 = perf()
        fill(m)
        fills.append(perf() - t0)
        if not allowed(tid):
            res["stop_not_allowed" if pos == len(ids) else "mask_disallows_token"] += 1
            if res["first_disallowed"] is None:
                res["first_disallowed"] = pos
        if not accept(m, tid):
            res["rejected_at"] = pos
            return res
    res["accepted"] = res["stop_not_allowed"] == 0
    return res


def walk_invalid(eng, ids) -> bool:
    """True if every token and then the stop token are accepted (the instance is wrongly accepted)."""
    m = eng.new_matcher()
    return all(eng.accept(m, tid) for tid in [*ids, eng.stop_id])


def run_schema(eng, item, limit_s: float, max_print: int, examples: list[str]) -> tuple[dict, list, list]:
    """Compile + first mask + two walks for one engine and one schema.
    Returns (record, first-pass and second-pass per-valid-instance fill times; None where the
    instance was not accepted)."""
    rec = {"status": "ok"}
    elapsed, err, captured = timed_compile(eng, item, limit_s)
    rec["compile_ms"] = elapsed / 1e6
    warnings = [ln.strip() for ln in captured.splitlines() if ln.strip()]
    if warnings:
        rec["stderr"] = warnings[:5]
    over_limit = limit_s > 0 and elapsed > limit_s * 1e9  # a native call cannot be interrupted
    if isinstance(err, CompileTimeout) or (err is None and over_limit):
        rec["status"] = "timeout"
    elif err is not None:
        rec["status"], rec["error"] = "unsupported", bj._err(err)[:300]
    if rec["status"] != "ok":
        eng.release()
        return rec, [], []
    if hasattr(eng, "phases_ms"):
        rec["phases"] = eng.phases_ms(rec["compile_ms"])
    rec["memory_bytes"] = eng.memory_bytes()
    n = {"valid": len(item["valid"]), "valid_accepted": 0, "mask_disallows_token": 0, "stop_not_allowed": 0,
         "accept_failed": 0, "exceptions": 0, "invalid": len(item["invalid"]), "invalid_wrongly_accepted": 0}
    passes: tuple[list, list] = ([], [])

    def note(kind, text):
        n[kind] += 1
        if len(examples) < max_print:
            examples.append(f"{kind}: {item['file']} {text}")

    gc_was = gc.isenabled()
    gc.disable()
    try:
        try:
            t0 = perf()
            m = eng.first_matcher()
            t1 = perf()
            eng.fill(m)
            rec["matcher_init_ms"], rec["first_mask_ms"] = (t1 - t0) / 1e6, (perf() - t1) / 1e6
        except Exception as e:
            rec["status"], rec["error"] = "unsupported", "first mask: " + bj._err(e)[:300]
            return rec, [], []
        if hasattr(eng, "lazy_record"):
            rec["lazy"] = eng.lazy_record()
        summary = eng.cache_summary()
        if summary is not None:
            rec["cache_after_first_mask"] = summary
        for p, per_instance in enumerate(passes):
            first = p == 0  # counts and examples come from the first pass only
            for k, ids in enumerate(item["valid"]):
                fills: list[int] = []
                try:
                    r = walk_valid(eng, ids, fills)
                except Exception as e:  # an engine bug must not kill the whole benchmark
                    if first:
                        note("exceptions", f"valid#{k}: {bj._err(e)}")
                    per_instance.append(None)
                    continue
                per_instance.append(fills if r["accepted"] else None)
                rec.setdefault(f"fill_ns_pass{p + 1}", []).extend(fills)
                if not first:
                    continue
                n["mask_disallows_token"] += r["mask_disallows_token"]
                n["stop_not_allowed"] += r["stop_not_allowed"]
                n["valid_accepted"] += r["accepted"]
                for kind, pos in (("mask_disallows_token", r["first_disallowed"]),
                                  ("accept_failed", r["rejected_at"])):
                    if pos is not None and len(examples) < max_print:
                        tid = ids[pos] if pos < len(ids) else eng.stop_id
                        examples.append(f"{kind}: {item['file']} valid#{k} token#{pos}/{len(ids)} id={tid} "
                                        f"{eng.tok.id_to_token(tid)!r}")
                n["accept_failed"] += r["rejected_at"] is not None
            if first:
                summary = eng.cache_summary()
                if summary is not None:
                    rec["cache_after_first_pass"] = summary
                    rec["memory_after_first_pass_bytes"] = eng.memory_bytes()
        for k, ids in enumerate(item["invalid"]):
            try:
                n["invalid_wrongly_accepted"] += walk_invalid(eng, ids)
            except Exception as e:
                note("exceptions", f"invalid#{k}: {bj._err(e)}")
    finally:
        if gc_was:
            gc.enable()
        eng.release()
    rec.update(n)
    return rec, passes[0], passes[1]


# ----------------------------------------------------------------------------------------------
# aggregation and report


def dist_stats(xs, scale: float = 1.0) -> dict:
    """n / mean / p50 / p90 / p99 / p99.9 / max of a list, divided by ``scale``."""
    keys = ("mean", "p50", "p90", "p99", "p99.9", "max")
    if not len(xs):
        return {"n": 0, **dict.fromkeys(keys)}
    a = np.asarray(xs, dtype=np.float64) / scale
    pct = np.percentile(a, [50, 90, 99, 99.9])
    return {"n": int(a.size), "mean": float(a.mean()), **{k: float(v) for k, v in zip(keys[1:5], pct)},
            "max": float(a.max())}


def _to_first_mask(rec) -> float:
    """Time to first mask: compile + matcher creation + first mask fill (ms)."""
    return rec["compile_ms"] + rec["matcher_init_ms"] + rec["first_mask_ms"]


def _phase_shares(recs) -> dict:
    """Per TTFM phase: its ms distribution and its share of the summed TTFM (xmask only)."""
    total = sum(_to_first_mask(r) for r in recs)
    out = {}
    for key, _ in PHASES:
        vals = [r[key] if key in r else r.get("phases", {}).get(key) for r in recs]
        if not vals or any(v is None for v in vals):
            continue
        out[key] = {**dist_stats(vals), "share_of_ttfm": sum(vals) / total if total else None}
    return out


def _lazy_share(recs, key) -> dict | None:
    """classified / top_states after the first mask or the first pass (lazy cache only)."""
    fr = [r[key]["classified"] / r[key]["top_states"] for r in recs
          if r.get(key) and r[key].get("top_states")]
    return dist_stats(fr) if fr else None


def summarize(engines, per_schema, fills1, fills2):
    """per_schema[i][engine] = record; fillsP[engine][i] = pass-P per-valid-instance fill lists."""
    common = [i for i, recs in enumerate(per_schema) if all(recs[e]["status"] == "ok" for e in engines)]
    # mask comparison: valid instances of common schemas that every engine accepted end to end, both passes
    common_inst = [(i, k) for i in common for k in range(len(fills1[engines[0]][i]))
                   if all(f[e][i][k] is not None for e in engines for f in (fills1, fills2))]
    out = {"common_schemas": len(common), "common_valid_instances": len(common_inst), "engines": {}}
    for e in engines:
        recs = [r[e] for r in per_schema]
        ok = [r for r in recs if r["status"] == "ok"]
        counts = collections.Counter(r["status"] for r in recs)
        tot = {k: int(sum(r.get(k, 0) for r in ok)) for k in
               ("valid", "valid_accepted", "mask_disallows_token", "stop_not_allowed", "accept_failed",
                "exceptions", "invalid", "invalid_wrongly_accepted")}
        com = {k: int(sum(per_schema[i][e].get(k, 0) for i in common))
               for k in ("valid", "valid_accepted", "invalid", "invalid_wrongly_accepted")}
        com_recs = [per_schema[i][e] for i in common]
        mem = [r["memory_bytes"] for r in ok if r.get("memory_bytes") is not None]
        mem_walked = [r["memory_after_first_pass_bytes"] for r in ok if r.get("memory_after_first_pass_bytes")]
        s = out["engines"][e] = {
            "schemas": len(recs), "compiled": counts["ok"], "unsupported": counts["unsupported"],
            "timeout": counts["timeout"],
            "compiled_memory_bytes_p50": float(np.median(mem)) if mem else None,
            "memory_after_first_pass_bytes_p50": float(np.median(mem_walked)) if mem_walked else None,
            "counts_own": tot, "counts_common": com,
        }
        for name, subset in (("common", com_recs), ("own", ok)):
            s[f"compile_ms_{name}"] = dist_stats([r["compile_ms"] for r in subset])
            s[f"first_mask_ms_{name}"] = dist_stats([r["first_mask_ms"] for r in subset])
            s[f"ttfm_ms_{name}"] = dist_stats([_to_first_mask(r) for r in subset])
        for p, f in ((1, fills1), (2, fills2)):
            s[f"mask_pass{p}_us_common"] = dist_stats([t for i, k in common_inst for t in f[e][i][k]], 1e3)
            s[f"mask_pass{p}_us_own"] = dist_stats([t for r in ok for t in r.get(f"fill_ns_pass{p}", [])], 1e3)
        if e in XMASK_VARIANTS:
            s["ttfm_phases_common"] = _phase_shares(com_recs)
            s["ttfm_phases_own"] = _phase_shares(ok)
            s["classified_share_after_first_mask"] = _lazy_share(ok, "cache_after_first_mask")
            s["classified_share_after_first_pass"] = _lazy_share(ok, "cache_after_first_pass")
            s["two_parts"] = _two_parts(ok)
    return out


def _two_parts(recs) -> dict:
    """Schemas compiled in two parts (xmask/compiler/lazy_schema.py): how many, how many first
    masks came from the first part, and the whole grammar's build after it (ms)."""
    lazy = [r["lazy"] for r in recs if r.get("lazy", {}).get("two_parts")]
    return {"schemas": len(recs), "two_parts": len(lazy),
            "first_part_served": sum(x["first_part_served"] for x in lazy),
            "rest_build_ms": dist_stats([x["rest_build_ms"] for x in lazy]) if lazy else None}


def xmask_git() -> str | None:
    """HEAD of the repo, with '+dirty' if xmask/ has uncommitted changes (the code measured)."""
    def run(*a):
        return subprocess.run(["git", "-C", str(bj.REPO), *a], capture_output=True, text=True,
                              timeout=10).stdout.strip()

    try:
        head = run("rev-parse", "--short", "HEAD")
        return (head + ("+dirty" if run("status", "--porcelain", "--", "xmask") else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def write_json(path: pathlib.Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


# ----------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=300, help="MaskBench files, strided over the sorted list (0: all)")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA,
                    help="shared data dir (default $XMASK_DATA or ../shared/data from the repo root)")
    ap.add_argument("--engines", default="xmask,xgrammar,llguidance",
                    help=f"comma-separated subset of {list(ENGINES)} (xmask is expanded by --xmask-mode)")
    ap.add_argument("--xmask-mode", choices=("lazy", "precompute", "both"), default="lazy",
                    help="xmask's compiler: lazy (default GrammarCompiler, column 'xmask'), precompute "
                         "(precompute=True, column 'xmask-eager') or both columns in one run")
    ap.add_argument("--max-instances-per-schema", type=int, default=3,
                    help="at most this many valid AND this many invalid instances per schema (default 3)")
    ap.add_argument("--lenient", action="store_true",
                    help="xmask lenient=True and llguidance lenient: approximate instead of rejecting "
                         "unsupported keywords / unknown formats (XGrammar always approximates)")
    ap.add_argument("--compile-timeout", type=float, default=60.0, help="per-schema compile limit in s (0: none)")
    ap.add_argument("--slow", type=float, default=5.0, help="list compiles slower than this many s (default 5)")
    ap.add_argument("--max-print", type=int, default=10, help="walk problem examples to print per engine")
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="JSON result file")
    args = ap.parse_args(argv)
    if args.lenient:
        XMASK_OPTIONS["lenient"] = LLG_JSON_OPTIONS["lenient"] = True

    from tokenizers import Tokenizer

    tok_path = args.data / "tokenizers" / "llama3" / "tokenizer.json"
    if not tok_path.exists():
        raise SystemExit(f"tokenizer not found: {tok_path} (set --data or XMASK_DATA)")
    tok = Tokenizer.from_file(str(tok_path))
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    stop_id = stop_token_id(tok, tok_path)

    t0 = time.perf_counter()
    items = load_schemas(sample_files(args.data / "maskbench", args.schemas), tok, args.max_instances_per_schema)
    n_valid, n_invalid = sum(len(x["valid"]) for x in items), sum(len(x["invalid"]) for x in items)
    print(f"data: {args.data}  schemas={len(items)} valid={n_valid} invalid={n_invalid} instances "
          f"vocab={vocab_size} stop={stop_id} (loaded in {time.perf_counter() - t0:.1f}s)")

    engines: dict[str, object] = {}
    skipped: dict[str, str] = {}
    setup_ms: dict[str, float] = {}
    warm = {"schema": WARMUP_SCHEMA, "text": json.dumps(WARMUP_SCHEMA)}
    for name in engines_wanted(args.engines, args.xmask_mode):
        stage = "import"
        try:
            eng = ENGINES[name](tok, tok_path, vocab_size, stop_id, 1)
            stage = "setup"
            t0 = perf()
            eng.prepare()
            setup_ms[name] = (perf() - t0) / 1e6
            # warm-up (not recorded): load lazy modules, first-call costs
            _, err, _ = timed_compile(eng, warm, 0)
            if err is not None:
                raise err
            eng.fill(eng.first_matcher())
            eng.release()
        except Exception as e:  # ImportError and friends
            skipped[name] = f"{stage} failed: {bj._err(e)}"
            print(f"[{name}] skipped: {skipped[name]}")
            continue
        engines[name] = eng
    names = list(engines)
    if not names:
        raise SystemExit("no engine could be set up")
    git_head = xmask_git()  # now: the code loaded is the code measured, even if HEAD moves during the run
    print(f"xmask at git {git_head}; engines: "
          + ", ".join(f"{n} (tokenizer setup {setup_ms[n]:.0f} ms)" for n in names))
    if any(e in XMASK_VARIANTS for e in names) and xmask_has_precompute() is False:
        print("note: this xmask has no lazy cache (no precompute option): xmask and xmask-eager are the "
              "same eager compiler")

    per_schema: list[dict] = []
    fills1 = {e: [] for e in names}
    fills2 = {e: [] for e in names}
    examples = {e: [] for e in names}
    t_start = time.perf_counter()
    for i, item in enumerate(items):
        recs = {}
        for e in names:
            recs[e], pass1, pass2 = run_schema(engines[e], item, args.compile_timeout, args.max_print, examples[e])
            fills1[e].append(pass1)
            fills2[e].append(pass2)
        per_schema.append(recs)
        if (i + 1) % 25 == 0 or i + 1 == len(items):
            el = time.perf_counter() - t_start
            print(f"  {i + 1}/{len(items)} schemas, {el:.0f}s  " +
                  "  ".join(f"{e}: {sum(r[e]['status'] == 'ok' for r in per_schema)} ok" for e in names), flush=True)

    for e in names:
        for ex in examples[e]:
            print(f"[{e}] {ex}")
    summ = summarize(names, per_schema, fills1, fills2)
    print()
    for e in names:
        tp = summ["engines"][e].get("two_parts")
        if tp and tp["two_parts"]:
            rb = tp["rest_build_ms"]
            print(f"[{e}] two-part compiles: {tp['two_parts']} of {tp['schemas']} schemas, first mask "
                  f"from the first part in {tp['first_part_served']}; the rest's build after it "
                  f"p50 {rb['p50']:.3f} / p90 {rb['p90']:.3f} ms")
    collections_table, slow, errors = report(summ, names, per_schema, items, args.compile_timeout, args.slow * 1e3)
    for k, v in skipped.items():
        print(f"note: {k} skipped ({v})")

    schemas_out = []
    for item, recs in zip(items, per_schema):
        row = {"file": item["file"], "collection": item["collection"],
               "valid": len(item["valid"]), "invalid": len(item["invalid"]), "engines": {}}
        for e in names:
            r = {k: v for k, v in recs[e].items() if not k.startswith("fill_ns")}
            for p in (1, 2):
                if recs[e].get(f"fill_ns_pass{p}"):
                    r[f"mask_pass{p}_mean_us"] = float(np.mean(recs[e][f"fill_ns_pass{p}"])) / 1e3
            row["engines"][e] = r
        schemas_out.append(row)
    out = {
        "benchmark": "bench_json_schema",
        "tokenizer": str(tok_path),
        "vocab_size": vocab_size,
        "stop_token_id": stop_id,
        "options": {"schemas": args.schemas, "max_instances_per_schema": args.max_instances_per_schema,
                    "compile_timeout_s": args.compile_timeout, "engines": names, "xmask_mode": args.xmask_mode,
                    "xmask_has_precompute": xmask_has_precompute(),
                    "xmask": f"compile_json_schema(schema, **{XMASK_OPTIONS}), cache disabled",
                    "xgrammar": "compile_json_schema(text, strict_mode=False, any_whitespace=True), cache disabled",
                    "llguidance": f"grammar_from_json_schema(schema, defaults={LLG_JSON_OPTIONS})"},
        "units": {"*_ms": "milliseconds", "*_us": "microseconds per call", "memory": "bytes"},
        "hardware": {"platform": platform.platform(), "machine": platform.machine(),
                     "cpu_model": bj._cpu_model(), "cores": os.cpu_count()},
        "software": {"python": platform.python_version(), "cython": bj._version("Cython"), "numpy": np.__version__,
                     **{d: bj._version(d) for d in ("tokenizers", "torch", "xmask", "xgrammar", "llguidance")},
                     "xmask_git": git_head},
        "skipped": skipped,
        "tokenizer_setup_ms": setup_ms,
        "notes": {e: engines[e].notes for e in names},
        "summary": summ,
        "per_collection": collections_table,
        "slow_compiles": {e: [{"file": f, "compile_ms": ms, "status": st} for ms, f, st in v] for e, v in slow.items()},
        "unsupported_by_message": {e: [{"message": m, "count": c} for m, c in v] for e, v in errors.items()},
        "walk_examples": examples,
        "schemas": schemas_out,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
