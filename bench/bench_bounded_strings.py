#!/usr/bin/env python
"""Bounded strings (``maxLength``): compile, and the masks of a first and a second pass.

A JSON string with ``maxLength: n`` is a chain of about 5n automaton states, one group per
character position, so a lazy token-mask cache meets a new state at nearly every token of the
string's first generation: what such a classification costs is what a user waits for on every
token of the first request that writes a long bounded string.  Per ``maxLength`` (default 40,
255, 1000), schema ``{"a": string with that maxLength}``, Llama-3:

* compile + first mask (cold, CPU ms, fastest of 3);
* a first pass over one valid document (an ``a`` of ``maxLength - 3`` characters of English
  words), on the freshly compiled grammar: every fill, mean / p99 / max in us;
* a second pass with a new matcher on the same compiled grammar (steady state).

llguidance (if installed) runs the same schema and text in the same run (its lexer is lazy too).
Writes ``bench/results/bounded_strings.json``.  No assertions.

Usage:  python bench/bench_bounded_strings.py [--max-lengths 40,255,1000] [--engines xmask,llguidance]
        [--text words|mixed]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import LLG_JSON_OPTIONS  # noqa: E402

OUT = bj.REPO / "bench" / "results" / "bounded_strings{}.json"
WORDS = "the quick brown fox jumps over a lazy dog while 123 numbers and symbols !? go by".split()


# --text mixed: escapes, 2-, 3- and 4-byte characters among the words, so that tokens end
# inside a character or an escape (JSON-escaped with ensure_ascii: \uXXXX, surrogate pairs)
MIXED = ["the", " quick", " fox", "\n", '"', "\\", "/", "\t", "\x01", "é", "ß", "中文", "日本語",
         "😀", "🎉", " naïve", "Ω"]


def document(max_len: int, text: str = "words") -> str:
    rng = random.Random(max_len)
    if text == "mixed":
        # (\uXXXX spellings without surrogate pairs: llguidance rejects those)
        escaped = max_len % 2 == 1
        pool = [p for p in MIXED if not escaped or all(ord(c) < 0x10000 for c in p)]
        chars: list = []
        while len(chars) < max(0, max_len - 3):
            chars.extend(rng.choice(pool))
        return json.dumps({"a": "".join(chars[: max(0, max_len - 3)])}, ensure_ascii=escaped)
    text = " ".join(rng.choice(WORDS) for _ in range(max_len))[: max(0, max_len - 3)]
    return json.dumps({"a": text})


def stats(us) -> dict:
    a = np.asarray(us, dtype=float)
    return {"mean": float(a.mean()), "p99": float(np.percentile(a, 99)), "max": float(a.max())}


class Xmask:
    name = "xmask"

    def __init__(self, data):
        self.xmask, self.info, self.compiler, self.bitmask = bj.xmask_llama3(data)

    def compile(self, schema):
        c = self.compiler.compile_json_schema(schema, strict_mode=False, any_whitespace=True)
        m = self.xmask.GrammarMatcher(c)
        m.fill_next_token_bitmask(self.bitmask)
        return c

    def matcher(self, compiled):
        return self.xmask.GrammarMatcher(compiled)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bitmask)

    def accept(self, m, t):
        return m.accept_token(t)


class LLGuidance:
    name = "llguidance"

    def __init__(self, data):
        import llguidance
        import llguidance.numpy as llnp
        self.llg, self.llnp = llguidance, llnp
        path = data / "tokenizers" / "llama3" / "tokenizer.json"
        self.tok = llguidance.LLTokenizer(str(path), n_vocab=128256, eos_token=128009)
        self.bitmask = llnp.allocate_token_bitmask(1, 128256)

    def compile(self, schema):
        g = self.llg.LLMatcher.grammar_from_json_schema(schema, defaults=LLG_JSON_OPTIONS)
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        self.llnp.fill_next_token_bitmask(m, self.bitmask, 0)
        return g

    def matcher(self, grammar):
        return self.llg.LLMatcher(self.tok, grammar, log_level=0)

    def fill(self, m):
        self.llnp.fill_next_token_bitmask(m, self.bitmask, 0)

    def accept(self, m, t):
        return m.consume_token(t)


def run(eng, max_len: int, ids) -> dict:
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": max_len}},
              "required": ["a"]}
    best, compiled = None, None
    for _ in range(3):
        t0 = time.thread_time()
        compiled = eng.compile(schema)
        dt = time.thread_time() - t0
        best = dt if best is None else min(best, dt)
    out = {"ttfm_ms": best * 1e3}
    for label in ("first_pass_us", "second_pass_us"):
        m, times = eng.matcher(compiled), []
        for t in ids:
            t0 = time.perf_counter_ns()
            eng.fill(m)
            times.append((time.perf_counter_ns() - t0) / 1e3)
            if not eng.accept(m, t):
                print(f"{eng.name} rejected token {t} of the document (maxLength {max_len})")
                return None
        out[label] = stats(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-lengths", default="40,255,1000")
    ap.add_argument("--engines", default="xmask,llguidance")
    ap.add_argument("--text", default="words", choices=["words", "mixed"],
                    help="the string's text: English words, or words mixed with escapes and "
                         "multi-byte characters (odd maxLength: written with \\uXXXX escapes, BMP only)")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(args.data / "tokenizers" / "llama3" / "tokenizer.json"))
    engines = []
    for name in args.engines.split(","):
        try:
            engines.append({"xmask": Xmask, "llguidance": LLGuidance}[name](args.data))
        except ImportError:
            print(f"{name}: not installed, skipped")
    results = {}
    print(f"{'maxLength':>9} {'engine':<11} {'TTFM ms':>8} | {'first pass us: mean':>19} {'p99':>8} {'max':>8}"
          f" | {'second: mean':>12} {'p99':>7} {'max':>7}")
    for n in [int(x) for x in args.max_lengths.split(",")]:
        ids = tok.encode(document(n, args.text), add_special_tokens=False).ids
        for eng in engines:
            r = run(eng, n, ids)
            if r is None:
                continue
            results.setdefault(str(n), {})[eng.name] = dict(r, tokens=len(ids))
            f, s = r["first_pass_us"], r["second_pass_us"]
            print(f"{n:>9} {eng.name:<11} {r['ttfm_ms']:>8.2f} | {f['mean']:>19.1f} {f['p99']:>8.0f}"
                  f" {f['max']:>8.0f} | {s['mean']:>12.2f} {s['p99']:>7.1f} {s['max']:>7.0f}")
    out = pathlib.Path(str(OUT).format("" if args.text == "words" else "_" + args.text))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"results": results, "machine": bj._cpu_model()}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
