#!/usr/bin/env python
"""Memory benchmark: matcher history per token, bytes per matcher, compile-cache accounting.

Each figure is measured in a fresh child process (RSS from /proc/self/statm, after
``malloc_trim``), for xmask and, where the measurement applies, XGrammar in the same run:

* **bytes/token**: a matcher's growth while accepting a long generation, (a) a JSON string of
  ``--json-tokens`` tokens (default 100,000) with the built-in JSON grammar on Llama-3,
  (b) a ``[a-z]*`` walk of ``--walk-tokens`` (default 1,000,000) lowercase tokens of one to four
  letters; xmask with and without ``max_rollback_tokens`` (``--window``, default 16; xmask's own
  count ``_memory_bytes()`` and RSS), XGrammar by RSS (it ignores ``max_rollback_tokens``);
* **bytes/matcher**: RSS over ``--matchers`` (default 10,000) fresh matchers of the built-in
  JSON grammar on Llama-3, each after one fill (xmask also by ``_memory_bytes()``);
* **compile cache**: ``--schemas`` MaskBench schemas compiled on one ``GrammarCompiler`` and
  walked along up to 3 valid instances each; ``get_cache_size_bytes()`` (what xmask counts),
  the sum of ``memory_size_bytes`` (the runtime tables only), and the RSS that
  ``clear_cache()`` gives back; XGrammar's ``get_cache_size_bytes()`` and RSS likewise.

Prints a table and writes JSON to bench/results/bench_memory.json.  Nothing here asserts.

Usage:  python bench/bench_memory.py [--quick] [--engines xmask,xgrammar]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = pathlib.Path(os.environ.get("XMASK_DATA", REPO.parent / "shared" / "data"))
OUT = REPO / "bench" / "results" / "bench_memory.json"
LLAMA3 = DATA / "tokenizers" / "llama3" / "tokenizer.json"
MEMORY_CAP = 8 << 30  # address-space cap of each child


# ---------------------------------------------------------------------------- child side

def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _trimmed_rss():
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    return _rss()


def _engine(name):
    if name == "xmask":
        import xmask as mod
    else:
        import xgrammar as mod
    info = mod.TokenizerInfo.from_huggingface(_hf_tokenizer())
    return mod, info


def _hf_tokenizer():
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(LLAMA3))


def _letter_ids(info, n):
    import numpy as np

    vocab = info.decoded_vocab
    pool = [i for i, b in enumerate(vocab) if 1 <= len(b) <= 4 and all(97 <= c <= 122 for c in b)]
    return np.random.default_rng(0).choice(pool, n).tolist()


def child_tokens(engine, kind, n, window):
    """Accept n tokens; returns bytes per token (RSS and, for xmask, _memory_bytes)."""
    import warnings

    mod, info = _engine(engine)
    compiler = mod.GrammarCompiler(info)
    if kind == "json":
        cg = compiler.compile_builtin_json_grammar()
        tok = _hf_tokenizer()
        chunk = tok.encode(" lorem ipsum dolor sit amet, consectetur adipiscing elit",
                           add_special_tokens=False)
        ids = (chunk * (n // len(chunk) + 1))[:n]
        prefix = '{"k": "'
    else:
        cg = compiler.compile_grammar("root ::= [a-z]*")
        ids = _letter_ids(info, n)
        prefix = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # XGrammar: max_rollback_tokens is deprecated
        m = mod.GrammarMatcher(cg, max_rollback_tokens=window)
    if prefix:
        assert m.accept_string(prefix)
    own0 = m._memory_bytes() if hasattr(m, "_memory_bytes") else None
    r0 = _trimmed_rss()
    for t in ids:
        if not m.accept_token(t):
            raise SystemExit(f"token {t} rejected")
    r1 = _trimmed_rss()
    out = {"tokens": n, "rss_bytes_per_token": (r1 - r0) / n}
    if own0 is not None:
        out["own_bytes_per_token"] = (m._memory_bytes() - own0) / n
        out["own_bytes_end"] = m._memory_bytes()
    return out


def child_matchers(engine, n):
    import numpy as np

    mod, info = _engine(engine)
    cg = mod.GrammarCompiler(info).compile_builtin_json_grammar()
    bm = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    warm = mod.GrammarMatcher(cg)
    warm.fill_next_token_bitmask(bm)
    r0 = _trimmed_rss()
    ms = []
    for _ in range(n):
        m = mod.GrammarMatcher(cg)
        m.fill_next_token_bitmask(bm)
        ms.append(m)
    r1 = _trimmed_rss()
    out = {"matchers": n, "rss_bytes_per_matcher": (r1 - r0) / n}
    if hasattr(ms[0], "_memory_bytes"):
        out["own_bytes_per_matcher"] = ms[0]._memory_bytes()
    return out


def child_cache(engine, n_schemas):
    import glob

    import numpy as np

    mod, info = _engine(engine)
    tok = _hf_tokenizer()
    files = sorted(glob.glob(str(DATA / "maskbench" / "*.json")))
    files = files[:: max(1, len(files) // n_schemas)][:n_schemas]
    compiler = mod.GrammarCompiler(info, cache_limit_bytes=-1)
    bm = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    r0 = _trimmed_rss()
    compiled = 0
    for f in files:
        entry = json.loads(pathlib.Path(f).read_text())
        try:
            cg = compiler.compile_json_schema(json.dumps(entry["schema"]))
        except Exception:
            continue
        compiled += 1
        for t in [t for t in entry["tests"] if t["valid"]][:3]:
            m = mod.GrammarMatcher(cg)
            for tid in tok.encode(json.dumps(t["data"]), add_special_tokens=False):
                m.fill_next_token_bitmask(bm)
                if not m.accept_token(tid):
                    break
    cg = m = None
    r1 = _trimmed_rss()
    out = {"schemas": compiled, "reported": compiler.get_cache_size_bytes(),
           "rss_growth": r1 - r0}
    if engine == "xmask":
        out["sum_memory_size_bytes"] = sum(c.memory_size_bytes for c in compiler._cache.values())
    compiler.clear_cache()
    out["rss_freed_by_clear"] = r1 - _trimmed_rss()
    return out


CHILDREN = {"tokens": child_tokens, "matchers": child_matchers, "cache": child_cache}


# ---------------------------------------------------------------------------- parent side

def run_child(name, *args):
    code = (
        "import resource, sys, json; "
        f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_CAP}, {MEMORY_CAP})); "
        f"sys.path.insert(0, {str(REPO / 'bench')!r}); import bench_memory as b; "
        f"print('RESULT', json.dumps(b.CHILDREN[{name!r}](*{args!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=3600)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default="xmask,xgrammar")
    ap.add_argument("--json-tokens", type=int, default=100_000)
    ap.add_argument("--walk-tokens", type=int, default=1_000_000)
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--matchers", type=int, default=10_000)
    ap.add_argument("--schemas", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="10x smaller runs")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    a = ap.parse_args(argv)
    if a.quick:
        a.json_tokens, a.walk_tokens, a.matchers, a.schemas = 10_000, 100_000, 1_000, 8
    engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    results = {"tokens": {}, "matchers": {}, "cache": {}}
    for engine in engines:
        for kind, n in (("json", a.json_tokens), ("walk", a.walk_tokens)):
            windows = (-1, a.window) if engine == "xmask" else (-1,)
            for w in windows:
                key = f"{engine} {kind} window={w}"
                results["tokens"][key] = r = run_child("tokens", engine, kind, n, w)
                print(f"{key:32s} {r}", flush=True)
        results["matchers"][engine] = r = run_child("matchers", engine, a.matchers)
        print(f"{engine} matchers: {r}", flush=True)
        results["cache"][engine] = r = run_child("cache", engine, a.schemas)
        print(f"{engine} compile cache: {r}", flush=True)

    print("\nbytes per accepted token (RSS; xmask's own count in brackets)")
    for key, r in results["tokens"].items():
        if "error" in r:
            print(f"  {key:32s} error: {r['error']}")
            continue
        own = f" [{r['own_bytes_per_token']:.2f}]" if "own_bytes_per_token" in r else ""
        print(f"  {key:32s} {r['rss_bytes_per_token']:8.2f}{own}")
    print("bytes per matcher (RSS over the matchers; xmask's own count in brackets)")
    for engine, r in results["matchers"].items():
        own = f" [{r['own_bytes_per_matcher']}]" if "own_bytes_per_matcher" in r else ""
        print(f"  {engine:10s} {r.get('rss_bytes_per_matcher', r)}{own}")
    print("compile cache: reported vs RSS freed by clear_cache()")
    for engine, r in results["cache"].items():
        print(f"  {engine:10s} {r}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"args": vars(a) | {"out": str(a.out)}, "results": results},
                                indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
