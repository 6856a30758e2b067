"""The ``compile``, ``inspect`` and ``bench`` commands of ``python -m xmask``.

Each takes a grammar file (a JSON Schema ``.json``, EBNF/GBNF ``.ebnf``/``.gbnf``, a regex
``.regex``/``.re``; ``--kind`` overrides the guess from the extension) and a tokenizer
(``--tokenizer PATH/tokenizer.json``, default: the embedded one), and prints figures a person
can act on.  Bad input (a missing file, a malformed grammar) prints ``error: ...`` and exits
with status 3; a document the grammar rejects exits with status 1.

Example (from a shell)::

    python -m xmask compile schema.json --tokenizer llama3/tokenizer.json --precompute
    python -m xmask inspect schema.json --top 10
    python -m xmask bench schema.json --documents docs.jsonl
"""

from __future__ import annotations

import json
import os
import pathlib
import statistics
import sys
import time
from typing import Iterable, List, Optional

KINDS = ("json-schema", "ebnf", "regex")
_EXTENSIONS = {".json": "json-schema", ".ebnf": "ebnf", ".gbnf": "ebnf", ".regex": "regex",
               ".re": "regex"}


class InputError(Exception):
    """Something the shell user must fix (file, kind, grammar): printed, exit status 3."""


def guess_kind(path: pathlib.Path, kind: Optional[str]) -> str:
    """The grammar kind: ``kind`` if given, else from the file extension.

    Example::

        >>> guess_kind(pathlib.Path("a.gbnf"), None)
        'ebnf'
    """
    if kind:
        return kind
    guessed = _EXTENSIONS.get(path.suffix.lower())
    if guessed is None:
        raise InputError(f"cannot tell the grammar kind of {path.name!r} from its extension; "
                         f"pass --kind ({', '.join(KINDS)})")
    return guessed


def load_tokenizer(path: Optional[str]):
    """``(tokenizers.Tokenizer, TokenizerInfo, description)`` for a tokenizer.json path, or the
    embedded default tokenizer when ``path`` is None."""
    import xmask

    if path is None:
        return xmask.default_tokenizer(), xmask.default_tokenizer_info(), "embedded default"
    import tokenizers

    if not pathlib.Path(path).is_file():
        raise InputError(f"tokenizer file not found: {path}")
    try:
        return tokenizers.Tokenizer.from_file(path), xmask.TokenizerInfo.from_huggingface(path), path
    except Exception as e:  # noqa: BLE001 -- any load failure is the user's file
        raise InputError(f"cannot load tokenizer {path}: {e}") from e


def compile_file(compiler, path: pathlib.Path, kind: str):
    """Compile the grammar file; xmask errors become :class:`InputError` with their message."""
    import xmask

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from e
    try:
        if kind == "json-schema":
            return compiler.compile_json_schema(text)
        if kind == "ebnf":
            return compiler.compile_grammar(text)
        return compiler.compile_regex(text.strip("\n"))
    except xmask.XmaskError as e:
        raise InputError(f"{path.name}: {type(e).__name__}: {e}") from e


def _rule_table(compiled) -> List[dict]:
    rows = {}
    for rec in compiled.cache_stats():
        row = rows.setdefault(rec.rule, {"rule": rec.rule, "states": 0, "bytes": 0,
                                         "shared": 0, "uncertain": 0})
        row["states"] += 1
        row["bytes"] += 0 if rec.shared else rec.bytes
        row["shared"] += bool(rec.shared)
        row["uncertain"] += rec.uncertain
    return sorted(rows.values(), key=lambda r: -r["bytes"])


def precompute_with_progress(compiled) -> None:
    """Classify every state of ``compiled`` on all cores, with a progress bar on stderr when
    ``tqdm`` is installed and stderr is a terminal (a big grammar's warm-up takes seconds)."""
    threads = os.cpu_count() or 1
    try:  # optional dependency
        from tqdm import tqdm
    except ImportError:
        compiled.precompute(max_threads=threads)
        return
    with tqdm(total=0, desc="classifying states", unit="walk",
              disable=not sys.stderr.isatty()) as bar:
        def update(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        compiled.precompute(max_threads=threads, progress=update)


def run_compile(args) -> int:
    """``compile``: compile time, states, cache memory, uncertain tokens; ``--output`` writes
    the serialized compiled grammar."""
    import xmask

    path = pathlib.Path(args.grammar)
    kind = guess_kind(path, args.kind)
    _, info, source = load_tokenizer(args.tokenizer)
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    t0 = time.perf_counter()
    compiled = compile_file(compiler, path, kind)
    if args.precompute:
        precompute_with_progress(compiled)
    ms = (time.perf_counter() - t0) * 1000
    s = compiled.cache_summary()
    uncertain = sum(r.uncertain for r in compiled.cache_stats())
    print(f"{path.name} ({kind}), tokenizer {source} ({info.vocab_size} ids)")
    print(f"  compile: {ms:.1f} ms{' (every state classified)' if args.precompute else ''}")
    print(f"  states that can be on top of the stack: {s['top_states']}, classified "
          f"{s['classified']}, pending {s['pending']}")
    print(f"  token-mask cache: {s['entries']} distinct entries, {s['bytes'] / 1024:.1f} KiB; "
          f"compiled grammar {compiled.memory_size_bytes / 1024:.1f} KiB")
    print(f"  uncertain tokens (checked against the real stack at fill time): {uncertain} over "
          f"the classified states")
    if not args.precompute:
        print("  (the cache fills lazily as masks are filled; --precompute classifies every state)")
    if args.output:
        pathlib.Path(args.output).write_text(compiled.serialize_json(), encoding="utf-8")
        print(f"  wrote the serialized grammar to {args.output}")
    return 0


def run_inspect(args) -> int:
    """``inspect``: every state classified, then cache memory per rule, largest first."""
    import xmask

    path = pathlib.Path(args.grammar)
    kind = guess_kind(path, args.kind)
    _, info, source = load_tokenizer(args.tokenizer)
    compiled = compile_file(xmask.GrammarCompiler(info, cache_enabled=False), path, kind)
    precompute_with_progress(compiled)
    rows = _rule_table(compiled)
    total = sum(r["bytes"] for r in rows)
    print(f"{path.name} ({kind}), tokenizer {source}: {len(rows)} rules with top states, "
          f"{total / 1024:.1f} KiB of cache entries")
    print(f"{'rule':<32} {'states':>7} {'KiB':>9} {'share':>6} {'shared':>7} {'uncertain':>10}")
    for r in rows[: args.top]:
        share = 100.0 * r["bytes"] / total if total else 0.0
        print(f"{r['rule'][:32]:<32} {r['states']:>7} {r['bytes'] / 1024:>9.1f} {share:>5.1f}% "
              f"{r['shared']:>7} {r['uncertain']:>10}")
    if len(rows) > args.top:
        print(f"... {len(rows) - args.top} more rules (--top N shows more)")
    return 0


def read_documents(path: pathlib.Path, kind: str) -> List[str]:
    """Documents to walk: a JSON Lines file (each line a JSON value; for a JSON Schema the
    value is the document, otherwise it must be a string) or plain text (one per line)."""
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from e
    if path.suffix.lower() not in (".jsonl", ".json"):
        return lines
    docs = []
    for n, line in enumerate(lines, 1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path.name} line {n}: not JSON ({e.msg})") from e
        if kind != "json-schema" and not isinstance(value, str):
            raise InputError(f"{path.name} line {n}: expected a JSON string document")
        docs.append(json.dumps(value) if kind == "json-schema" else value)
    return docs


def _progress(items: Iterable, total: int, desc: str):
    try:  # optional dependency: a bar when tqdm is installed and stderr is a terminal
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, total=total, desc=desc, disable=not sys.stderr.isatty())


def run_bench(args) -> int:
    """``bench``: fill-mask latency token by token over the given documents (first pass over
    fresh states and a second, steady pass), checking every token and the final stop token."""
    import xmask

    path = pathlib.Path(args.grammar)
    kind = guess_kind(path, args.kind)
    tokenizer, info, source = load_tokenizer(args.tokenizer)
    docs = read_documents(pathlib.Path(args.documents), kind)
    if not docs:
        raise InputError(f"{args.documents} holds no documents")
    compiled = compile_file(xmask.GrammarCompiler(info, cache_enabled=False), path, kind)
    bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
    failures = 0
    print(f"{path.name} ({kind}), tokenizer {source}, {len(docs)} documents")
    for pass_name in ("first pass", "steady pass"):
        times: List[float] = []
        for doc in _progress(docs, len(docs), pass_name):
            matcher = xmask.GrammarMatcher(compiled)
            ok = True
            for tid in tokenizer.encode(doc, add_special_tokens=False).ids:
                t0 = time.perf_counter_ns()
                matcher.fill_next_token_bitmask(bitmask)
                times.append((time.perf_counter_ns() - t0) / 1000)
                if not (int(bitmask[0, tid // 32]) >> (tid % 32)) & 1 or not matcher.accept_token(tid):
                    ok = False
                    break
            ok = ok and any(matcher.accept_token(s) for s in matcher.stop_token_ids[:1])
            if not ok and pass_name == "first pass":
                failures += 1
                print(f"  rejected: {doc[:70]!r}{'...' if len(doc) > 70 else ''}")
        if times:
            ordered = sorted(times)
            p99 = ordered[min(len(ordered) - 1, int(0.99 * (len(ordered) - 1)))]
            print(f"  {pass_name}: {len(times)} masks, mean {statistics.fmean(times):.1f} us, "
                  f"p50 {statistics.median(times):.1f} us, p99 {p99:.1f} us, max {ordered[-1]:.1f} us")
    print(f"  documents accepted: {len(docs) - failures} of {len(docs)}")
    return 1 if failures else 0
