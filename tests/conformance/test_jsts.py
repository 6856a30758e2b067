"""JSON-Schema-Test-Suite (draft 2020-12) scored through the token-level matcher, Llama-3.

For every test group the schema is converted with ``Grammar.from_json_schema(schema,
any_whitespace=True, strict_mode=False)`` (so the spec's defaults apply: additional
properties/items allowed) and compiled once, or raises ``UnsupportedSchemaError`` (the whole
group is then *unsupported*).  Each case is serialized with ``json.dumps(data)``, tokenized
with the Llama-3 ``tokenizers`` tokenizer (no special tokens) and walked token by token
through a fresh ``GrammarMatcher``; at the end every stop token must be allowed in the
filled mask and the first one accepted (see :func:`schema_scoring.walk_tokens`).

A schema that admits no instance at all (``false``, ``{"not": {}}``, ...) converts to a grammar
whose root can never finish; the compiler refuses it (``GrammarError``: "no complete
sentence"), and its cases count as rejected (each such group has invalid cases only).

A valid case passes iff it is accepted, an invalid case iff it is rejected.  Invariants:

* no invalid instance is ever accepted by a compiled schema (soundness), in the main folder,
  ``optional/`` and ``optional/format/`` (formats are assertions in xmask, as the
  ``optional/format`` tests assume);
* schema conversion raises nothing but ``UnsupportedSchemaError``;
* per-file pass counts never drop below ``jsts_baseline.json`` (update it with
  ``XMASK_UPDATE_BASELINE=1`` when a drop is intended).

In the main folder xmask's format *assertion* makes the ``format`` annotation-only cases
("invalid email string is only an annotation by default", valid) fail as valid-rejected;
those are counted like every other valid case rejected.  ``refRemote.json`` and other remote
references are unsupported (no network).  Run with ``-s`` to see the score table.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import time

import pytest
from conftest import DATA_DIR, require_data, tokenizer_json

import xmask
from schema_scoring import (
    INVALID_ACCEPTED,
    PASS,
    UNSUPPORTED,
    VALID_REJECTED,
    Baseline,
    classify,
    walk_tokens,
)
from xmask.errors import UnsupportedSchemaError

tokenizers = pytest.importorskip("tokenizers")

JSTS_DIR = DATA_DIR / "jsts" / "draft2020-12"
BASELINE = Baseline(pathlib.Path(__file__).with_name("jsts_baseline.json"))
ERROR = "error"

Case = collections.namedtuple("Case", "file group index description valid text outcome detail")


def _files():
    """Relative names: ``allOf.json``, ``optional/bignum.json``, ``optional/format/date.json``."""
    return sorted(str(p.relative_to(JSTS_DIR)) for p in JSTS_DIR.rglob("*.json"))


def _section(name: str) -> str:
    if name.startswith("optional/format/"):
        return "optional/format"
    if name.startswith("optional/"):
        return "optional"
    return "main"


def _run():
    path = tokenizer_json("llama3")
    info = xmask.TokenizerInfo.from_huggingface(path.parent)
    hf = tokenizers.Tokenizer.from_file(str(path))
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
    stops = list(info.stop_token_ids)
    assert stops, "Llama-3 TokenizerInfo has no stop tokens"

    groups = []  # (file, group index, group)
    for name in _files():
        with open(JSTS_DIR / name, encoding="utf-8") as f:
            for gi, group in enumerate(json.load(f)):
                groups.append((name, gi, group))
    texts = [json.dumps(t["data"]) for _, _, g in groups for t in g["tests"]]
    all_ids = iter(e.ids for e in hf.encode_batch(texts, add_special_tokens=False))
    texts = iter(texts)

    # convert every schema first (cheap), so that equal grammars are compiled only once
    t0 = time.perf_counter()
    converted = []  # (grammar or None, outcome, detail)
    for name, gi, group in groups:
        try:
            grammar = xmask.Grammar.from_json_schema(
                group["schema"], any_whitespace=True, strict_mode=False
            )
            converted.append((grammar, None, ""))
        except UnsupportedSchemaError as e:
            converted.append((None, UNSUPPORTED, str(e)))
        except Exception as e:  # noqa: BLE001 -- any other exception is a bug
            converted.append((None, ERROR, f"{type(e).__name__}: {e}"))
    uses = collections.Counter(g for g, _, _ in converted if g is not None)
    compiled_by_grammar = {}
    timing = {"convert": time.perf_counter() - t0, "compile": 0.0, "match": 0.0}

    cases = []
    for (name, gi, group), (grammar, outcome, detail) in zip(groups, converted):
        t0 = time.perf_counter()
        compiled = empty = None
        if grammar is not None:
            compiled = compiled_by_grammar.get(grammar)
            if compiled is None:
                try:
                    compiled = compiler.compile_grammar(grammar)
                except Exception as e:  # noqa: BLE001
                    if isinstance(e, xmask.GrammarError) and "no complete sentence" in str(e):
                        # the schema accepts no instance at all: the compiler refuses the
                        # empty language, which rejects every case (what the schema asks for)
                        empty = str(e)
                    else:
                        outcome, detail = ERROR, f"compile: {type(e).__name__}: {e}"
            uses[grammar] -= 1
            if uses[grammar] > 0 and compiled is not None:
                compiled_by_grammar[grammar] = compiled
            else:
                compiled_by_grammar.pop(grammar, None)
        t1 = time.perf_counter()
        for ti, test in enumerate(group["tests"]):
            text, ids = next(texts), next(all_ids)
            o, d = outcome, detail
            if compiled is not None:
                walk = walk_tokens(xmask.GrammarMatcher(compiled), ids, bitmask, stops)
                o = classify(test["valid"], walk)
                if not walk.accepted:
                    d = f"{walk.reason} at token {walk.step}/{len(ids)}"
            elif empty is not None:
                o = PASS if not test["valid"] else VALID_REJECTED
                d = "empty language: " + empty
            cases.append(Case(name, gi, ti, f"{group['description']} / {test['description']}",
                              bool(test["valid"]), text, o, d))
        timing["compile"] += t1 - t0
        timing["match"] += time.perf_counter() - t1
    return cases, timing


@pytest.fixture(scope="module")
def jsts():
    require_data("jsts", "draft2020-12")
    return _run()


def _counts(cases):
    per_file = collections.defaultdict(collections.Counter)
    for c in cases:
        per_file[c.file][c.outcome] += 1
    return per_file


def _table(cases) -> str:
    per_file = _counts(cases)
    head = f"{'file':44s} {'pass':>5s} {'unsup':>5s} {'fail':>5s} {'(v-rej':>6s} {'i-acc)':>6s} {'error':>5s}"
    lines = [head]
    for section in ("main", "optional", "optional/format"):
        tot = collections.Counter()
        for name in sorted(f for f in per_file if _section(f) == section):
            c = per_file[name]
            tot.update(c)
            fail = c[VALID_REJECTED] + c[INVALID_ACCEPTED]
            lines.append(f"{name:44s} {c[PASS]:5d} {c[UNSUPPORTED]:5d} {fail:5d} "
                         f"{c[VALID_REJECTED]:6d} {c[INVALID_ACCEPTED]:6d} {c[ERROR]:5d}")
        fail = tot[VALID_REJECTED] + tot[INVALID_ACCEPTED]
        lines.append(f"{'TOTAL ' + section:44s} {tot[PASS]:5d} {tot[UNSUPPORTED]:5d} {fail:5d} "
                     f"{tot[VALID_REJECTED]:6d} {tot[INVALID_ACCEPTED]:6d} {tot[ERROR]:5d}")
        lines.append("")
    return "\n".join(lines)


def _listing(cases, limit=40) -> str:
    out = [f"  {c.file}[{c.group}][{c.index}] {c.description!r}: {c.text[:100]!r} -- {c.detail}"
           for c in cases[:limit]]
    if len(cases) > limit:
        out.append(f"  ... and {len(cases) - limit} more")
    return "\n".join(out)


def test_no_invalid_instance_accepted(jsts):
    cases, _ = jsts
    bad = [c for c in cases if c.outcome == INVALID_ACCEPTED]
    assert not bad, f"{len(bad)} invalid instances accepted (soundness bugs):\n{_listing(bad)}"


def test_conversion_raises_only_unsupported(jsts):
    cases, _ = jsts
    seen, bad = set(), []
    for c in cases:
        if c.outcome == ERROR and (c.file, c.group) not in seen:
            seen.add((c.file, c.group))
            bad.append(c)
    assert not bad, f"{len(bad)} schemas raised other exceptions:\n{_listing(bad)}"


def test_scores_do_not_regress(jsts):
    cases, timing = jsts
    print(f"\nJSON-Schema-Test-Suite draft2020-12 / Llama-3: {len(cases)} cases; "
          + ", ".join(f"{k} {v:.1f}s" for k, v in timing.items()))
    print(_table(cases))
    if os.environ.get("XMASK_JSTS_VERBOSE", "") == "1":
        for kind in (VALID_REJECTED, UNSUPPORTED, ERROR):
            print(f"{kind}:\n" + _listing([c for c in cases if c.outcome == kind], limit=10**6))
    per_file = _counts(cases)
    counts = {name: c[PASS] for name, c in per_file.items()}
    counts["TOTAL"] = sum(counts.values())
    regressions = BASELINE.check(counts)
    assert not regressions, (
        "JSON-Schema-Test-Suite pass counts dropped below the baseline:\n  "
        + "\n  ".join(regressions) + "\n" + BASELINE.hint
    )
