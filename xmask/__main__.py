"""Command line: ``python -m xmask {demo,compile,inspect,bench} ...`` (``--help`` on each).

The demo compiles the built-in JSON grammar and a sample EBNF grammar for a tokenizer (by
default the embedded one, so it runs offline), walks a sample document of each token by token
while filling masks, and prints compile time, cache memory and mask timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

SAMPLE_JSON = {
    "name": "xmask demo",
    "tags": ["grammar", "json", "café", "東京"],
    "version": 1.25e2,
    "ok": True,
    "nested": {"list": [1, -2, 3.5, None], "escape": "line\nbreak \"quoted\""},
}

SAMPLE_EBNF = r"""
# A tiny command language: one or more "name(arg, ...)" calls, one per line.
root  ::= call ("\n" call)*
call  ::= name "(" (arg (", " arg)*)? ")"
name  ::= [a-z_] [a-z0-9_]*
arg   ::= number | string
number ::= "-"? [0-9]+ ("." [0-9]+)?
string ::= "\"" [^"\\\n]* "\""
"""
SAMPLE_EBNF_DOC = 'move(10, -2.5)\nsay("hello world")\nstop()'


def _walk(matcher, tokenizer, info, text, xmask):
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
    times = []
    for tid in ids:
        t0 = time.perf_counter_ns()
        matcher.fill_next_token_bitmask(bitmask)
        times.append((time.perf_counter_ns() - t0) / 1000)
        allowed = (int(bitmask[0, tid // 32]) >> (tid % 32)) & 1
        if not allowed or not matcher.accept_token(tid):
            raise SystemExit(f"demo failed: token {tid} {info.decoded_vocab[tid]!r} was rejected")
    t0 = time.perf_counter_ns()
    matcher.fill_next_token_bitmask(bitmask)
    times.append((time.perf_counter_ns() - t0) / 1000)
    stops = [s for s in matcher.stop_token_ids if (int(bitmask[0, s // 32]) >> (s % 32)) & 1]
    ok = bool(stops) and matcher.accept_token(stops[0]) and matcher.is_terminated()
    return len(ids), times, ok


def _p99(values):
    return sorted(values)[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]


def demo(tokenizer_path=None) -> int:
    import tokenizers

    import xmask

    t0 = time.perf_counter()
    if tokenizer_path:
        tokenizer = tokenizers.Tokenizer.from_file(tokenizer_path)
        info = xmask.TokenizerInfo.from_huggingface(tokenizer_path)
        source = tokenizer_path
    else:
        tokenizer = xmask.default_tokenizer()
        info = xmask.default_tokenizer_info()
        source = "embedded default (byte-level BPE)"
    compiler = xmask.GrammarCompiler(info)
    print(f"tokenizer: {source}: {info.vocab_size} ids, stop {info.stop_token_ids} "
          f"(loaded in {time.perf_counter() - t0:.2f} s)")
    cases = [
        ("built-in JSON grammar", compiler.compile_builtin_json_grammar, json.dumps(SAMPLE_JSON)),
        ("sample EBNF grammar", lambda: compiler.compile_grammar(SAMPLE_EBNF), SAMPLE_EBNF_DOC),
    ]
    failures = 0
    for title, compile_fn, text in cases:
        t0 = time.perf_counter()
        compiled = compile_fn()
        compile_ms = (time.perf_counter() - t0) * 1000
        n_tokens, times, ok = _walk(xmask.GrammarMatcher(compiled), tokenizer, info, text, xmask)
        failures += not ok
        summary = compiled.cache_summary()  # the cache fills lazily: what the walk classified
        print(f"\n== {title}")
        print(f"   compile: {compile_ms:.1f} ms; token-mask cache after the walk: "
              f"{summary['classified']} of {summary['top_states']} states classified, "
              f"{compiled.memory_size_bytes / 1024:.1f} KiB")
        print(f"   walked {n_tokens} tokens of {text[:60]!r}{'...' if len(text) > 60 else ''}")
        print(f"   mask time: mean {statistics.fmean(times):.1f} us, p99 {_p99(times):.1f} us, "
              f"max {max(times):.1f} us; ended with stop token: {'yes' if ok else 'NO'}")
    return 1 if failures else 0


_DESCRIPTION = """\
xmask: grammar-constrained decoding masks.

commands:
  demo      compile sample grammars, walk sample documents, print timings
  compile   compile a grammar file: time, states, cache memory, uncertain tokens
  inspect   cache memory per rule, largest first
  bench     mask latency over documents of your own

Grammar files: a JSON Schema (.json), EBNF/GBNF (.ebnf, .gbnf) or a regex (.regex, .re);
--kind overrides the extension. Exit status: 0 ok, 1 a document or the demo was rejected,
2 bad command line, 3 bad input (missing file, malformed grammar or tokenizer)."""


def _parser() -> argparse.ArgumentParser:
    from .cli_commands import KINDS

    parser = argparse.ArgumentParser(prog="python -m xmask", description=_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    d = sub.add_parser("demo", help="compile sample grammars and walk documents, printing timings")
    d.add_argument("--tokenizer", metavar="PATH", help="a HuggingFace tokenizer.json to use")
    helps = {"compile": "compile a grammar file and print what it costs",
             "inspect": "print the token-mask cache memory per rule",
             "bench": "time fill_next_token_bitmask over your documents"}
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("grammar", help="grammar file (.json schema, .ebnf/.gbnf, .regex)")
        p.add_argument("--kind", choices=KINDS, help="grammar kind (default: from the extension)")
        p.add_argument("--tokenizer", metavar="PATH",
                       help="a HuggingFace tokenizer.json (default: the embedded tokenizer)")
        if name == "compile":
            p.add_argument("--precompute", action="store_true",
                           help="classify every state now (warm-up mode) instead of lazily")
            p.add_argument("--output", metavar="FILE", help="write the serialized compiled grammar")
        elif name == "inspect":
            p.add_argument("--top", type=int, default=20, help="rules to list (default 20)")
        else:
            p.add_argument("--documents", required=True, metavar="FILE",
                           help="documents: .jsonl (one JSON value per line) or text, one per line")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        return demo(args.tokenizer)
    from . import cli_commands

    run = {"compile": cli_commands.run_compile, "inspect": cli_commands.run_inspect,
           "bench": cli_commands.run_bench}[args.command]
    try:
        return run(args)
    except cli_commands.InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
