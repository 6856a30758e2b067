"""MaskBench (JSONSchemaBench) instances against the built-in JSON grammar, Llama-3 tokenizer.

The built-in grammar accepts any RFC 8259 JSON value, so schema validity is irrelevant here:
*every* instance -- valid or invalid for its schema -- serialized with ``json.dumps(data)``
(default separators, ``ensure_ascii=True``) is JSON and must be accepted token by token, after
which every stop token must be set in the filled mask, be accepted, and terminate the matcher.
(Should ``json.dumps`` ever emit ``NaN``/``Infinity`` -- not JSON -- the instance must instead be
rejected.)

On a deterministic sample the fast mask is compared with the slow reference mask at every step,
and on subsets of the files two other serializations (compact UTF-8, and indented) are checked.

All ~9,100 files run by default (about 30 s, most of it tokenization); set
``XMASK_MASKBENCH_STRIDE=N`` to take every N-th file only (``XMASK_FULL=1`` forces all).
Run with ``-s`` to see the per-collection summary.
"""

from __future__ import annotations

import collections
import json
import os
import time

import numpy as np
import pytest
from conftest import DATA_DIR, require_data, tokenizer_json

import xmask
from maskbench_scoring import collection_of
from maskutil import bit as _bit, diff_ids as _diff_ids

tokenizers = pytest.importorskip("tokenizers")

MB_DIR = DATA_DIR / "maskbench"


def _stride() -> int:
    if os.environ.get("XMASK_FULL", "") == "1":
        return 1
    return max(1, int(os.environ.get("XMASK_MASKBENCH_STRIDE", "1")))


def _files():
    if not MB_DIR.is_dir():
        return []
    names = sorted(p for p in os.listdir(MB_DIR) if p.endswith(".json"))
    return names[:: _stride()]


_FILES = _files()
COLLECTIONS = sorted({collection_of(f) for f in _FILES}) or ["<no data>"]


class _NotJson(ValueError):
    pass


def _reject_constant(name):
    raise _NotJson(name)


def _is_strict_json(text: str) -> bool:
    try:
        json.loads(text, parse_constant=_reject_constant)
    except _NotJson:
        return False
    return True


Doc = collections.namedtuple("Doc", "collection file index valid text ids")
Result = collections.namedtuple("Result", "ok detail")


class Env:
    def __init__(self):
        path = tokenizer_json("llama3")
        self.info = xmask.TokenizerInfo.from_huggingface(path.parent)
        self.hf = tokenizers.Tokenizer.from_file(str(path))
        self.compiled = xmask.GrammarCompiler(self.info).compile_builtin_json_grammar()
        self.stops = list(self.info.stop_token_ids)
        assert self.stops, "Llama-3 TokenizerInfo has no stop tokens"
        self.vocab = self.info.decoded_vocab
        self.bm = np.asarray(xmask.allocate_token_bitmask(1, self.info.vocab_size))
        self.ref = np.asarray(xmask.allocate_token_bitmask(1, self.info.vocab_size))

    def tokenize(self, texts):
        encs = self.hf.encode_batch(list(texts), add_special_tokens=False)
        return [e.ids for e in encs]

    def run(self, text: str, ids) -> Result:
        """Walk ``ids``; then every stop token must be allowed, accepted, and terminate."""
        vocab = self.vocab
        got = b"".join(vocab[i] for i in ids)
        if got != text.encode("utf-8"):
            return Result(False, f"tokenization does not round-trip: {got[:80]!r}")
        m = xmask.GrammarMatcher(self.compiled)
        for k, tid in enumerate(ids):
            if not m.accept_token(tid):
                before = b"".join(vocab[i] for i in ids[:k])
                return Result(
                    False,
                    f"token {k}/{len(ids)} id={tid} {vocab[tid]!r} rejected after "
                    f"...{before[-60:]!r}",
                )
        m.fill_next_token_bitmask(self.bm)
        missing = [s for s in self.stops if not _bit(self.bm, s)]
        if missing:
            return Result(False, f"stop tokens {missing} not set in the final mask")
        for s in self.stops:
            if not m.accept_token(s):
                return Result(False, f"stop token {s} rejected at the end")
            if not m.is_terminated():
                return Result(False, f"not terminated after stop token {s}")
            m.rollback(1)
        return Result(True, "")


def _load_docs(files, dumps):
    docs = []
    for fname in files:
        with open(MB_DIR / fname, encoding="utf-8") as f:
            entry = json.load(f)
        for i, t in enumerate(entry.get("tests", [])):
            text = dumps(t["data"])
            if text is None:
                continue
            docs.append(Doc(collection_of(fname), fname, i, bool(t["valid"]), text, None))
    return docs


@pytest.fixture(scope="module")
def env():
    require_data("maskbench")
    return Env()


@pytest.fixture(scope="module")
def maskbench(env):
    """Every selected file's instances, tokenized and walked once (shared by the tests)."""
    assert _FILES, f"no MaskBench files in {MB_DIR}"
    t0 = time.perf_counter()
    docs = _load_docs(_FILES, json.dumps)
    t1 = time.perf_counter()
    all_ids = env.tokenize(d.text for d in docs)
    docs = [d._replace(ids=ids) for d, ids in zip(docs, all_ids)]
    t2 = time.perf_counter()
    results = []
    for d in docs:
        if _is_strict_json(d.text):
            results.append(env.run(d.text, d.ids))
        else:
            results.append(None)  # NaN / Infinity: checked separately
    t3 = time.perf_counter()
    timing = {"load": t1 - t0, "tokenize": t2 - t1, "match": t3 - t2}
    return docs, results, timing


def _failures_text(pairs, limit=10):
    lines = []
    for d, r in pairs[:limit]:
        lines.append(f"  {d.file} test #{d.index} (valid={d.valid}): {r.detail}; text={d.text[:120]!r}")
    if len(pairs) > limit:
        lines.append(f"  ... and {len(pairs) - limit} more")
    return "\n".join(lines)


def _summary(docs, results) -> str:
    stats = collections.defaultdict(lambda: collections.Counter())
    for d, r in zip(docs, results):
        s = stats[d.collection]
        s["files:" + d.file] = 1
        kind = "valid" if d.valid else "invalid"
        s[kind] += 1
        if r is None:
            s["not_json"] += 1
        elif r.ok:
            s[kind + "_ok"] += 1
    lines = [
        (f"{'collection':18s} {'files':>6s} {'valid':>7s} {'accepted':>8s} {'invalid':>8s} "
        f"{'accepted':>8s} {'non-JSON':>8s}")
    ]
    tot = collections.Counter()
    for name in sorted(stats):
        s = stats[name]
        n_files = sum(1 for k in s if k.startswith("files:"))
        row = (n_files, s["valid"], s["valid_ok"], s["invalid"], s["invalid_ok"], s["not_json"])
        tot.update(dict(zip("abcdef", row)))
        lines.append(f"{name:18s} {row[0]:6d} {row[1]:7d} {row[2]:8d} {row[3]:8d} {row[4]:8d} {row[5]:8d}")
    lines.append(
        f"{'TOTAL':18s} {tot['a']:6d} {tot['b']:7d} {tot['c']:8d} {tot['d']:8d} {tot['e']:8d} {tot['f']:8d}"
    )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_valid_instances_accepted(maskbench, collection):
    docs, results, _ = maskbench
    pairs = [(d, r) for d, r in zip(docs, results) if d.collection == collection and d.valid]
    assert pairs or collection == "<no data>", f"no valid instances in collection {collection}"
    bad = [(d, r) for d, r in pairs if r is not None and not r.ok]
    assert not bad, (
        f"{collection}: {len(bad)} of {len(pairs)} valid instances not accepted end to end "
        f"by the built-in JSON grammar (Llama-3):\n{_failures_text(bad)}\n\n{_summary(docs, results)}"
    )


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_invalid_instances_accepted_as_json(maskbench, collection):
    """Schema-invalid instances are still JSON: the schema-less JSON grammar accepts them."""
    docs, results, _ = maskbench
    pairs = [(d, r) for d, r in zip(docs, results) if d.collection == collection and not d.valid]
    bad = [(d, r) for d, r in pairs if r is not None and not r.ok]
    assert not bad, (
        f"{collection}: {len(bad)} of {len(pairs)} schema-invalid instances (still JSON) not "
        f"accepted by the built-in JSON grammar:\n{_failures_text(bad)}\n\n{_summary(docs, results)}"
    )


def test_non_json_dumps_rejected(maskbench, env):
    """json.dumps writes NaN/Infinity for non-finite floats: not JSON, so never accepted whole."""
    docs, results, _ = maskbench
    bad = []
    for d, r in zip(docs, results):
        if r is not None:
            continue
        m = xmask.GrammarMatcher(env.compiled)
        ok = all(m.accept_token(t) for t in d.ids)
        if ok:
            m.fill_next_token_bitmask(env.bm)
            if any(_bit(env.bm, s) for s in env.stops):
                bad.append(d)
    assert not bad, "non-JSON dumps accepted as complete JSON: " + ", ".join(
        f"{d.file}#{d.index} {d.text[:60]!r}" for d in bad[:10]
    )
    # the same must hold for a literal NaN / Infinity value
    for text in ("NaN", "[1, Infinity]", '{"a": -Infinity}'):
        m = xmask.GrammarMatcher(env.compiled)
        ok = m.accept_string(text)
        if ok:
            m.fill_next_token_bitmask(env.bm)
            assert not any(_bit(env.bm, s) for s in env.stops), text


def test_maskbench_summary(maskbench):
    docs, results, timing = maskbench
    n_files = len({d.file for d in docs})
    n_valid = sum(d.valid for d in docs)
    n_valid_ok = sum(1 for d, r in zip(docs, results) if d.valid and r is not None and r.ok)
    n_inv = sum(not d.valid for d in docs)
    n_inv_ok = sum(1 for d, r in zip(docs, results) if not d.valid and r is not None and r.ok)
    n_tokens = sum(len(d.ids) for d in docs)
    summary = _summary(docs, results)
    print(
        f"\nMaskBench / built-in JSON grammar / Llama-3: {len(_FILES)} files selected "
        f"(stride {_stride()}), {n_files} with instances, {len(docs)} instances, {n_tokens} tokens"
    )
    print(summary)
    print(
        f"valid accepted {n_valid_ok}/{n_valid}, invalid-but-JSON accepted {n_inv_ok}/{n_inv}; "
        + ", ".join(f"{k} {v:.1f}s" for k, v in timing.items())
    )
    if _stride() == 1:
        assert len(_FILES) > 9000, f"expected ~9,100 MaskBench files, found {len(_FILES)}"
    assert n_valid > 0
    assert n_valid_ok == n_valid and n_inv_ok == n_inv, summary


def _mask_sample(docs, n=20, lo=8, hi=60):
    cands = [d for d in docs if lo <= len(d.ids) <= hi and _is_strict_json(d.text)]
    if len(cands) <= n:
        return cands
    step = len(cands) / n
    return [cands[int(i * step)] for i in range(n)]


def test_fill_mask_equals_reference_on_sample(maskbench, env):
    """For ~20 documents, at every step: fast mask == reference mask, and the next token (or
    at the end every stop token) is allowed."""
    docs, _, _ = maskbench
    sample = _mask_sample(docs)
    assert len(sample) >= min(20, len(docs)) or len(sample) > 0
    steps = 0
    for d in sample:
        m = xmask.GrammarMatcher(env.compiled)
        for k in range(len(d.ids) + 1):
            m.fill_next_token_bitmask(env.bm)
            m._reference_fill_next_token_bitmask(env.ref)
            assert np.array_equal(env.bm, env.ref), (
                f"{d.file}#{d.index} step {k}: fill mask != reference mask; differing ids "
                f"{_diff_ids(env.bm, env.ref)[:20]}; text so far "
                f"{b''.join(env.vocab[i] for i in d.ids[:k])!r}"
            )
            steps += 1
            if k == len(d.ids):
                assert all(_bit(env.bm, s) for s in env.stops), f"{d.file}#{d.index}: stop not allowed"
                break
            tid = d.ids[k]
            assert _bit(env.bm, tid), f"{d.file}#{d.index} step {k}: next token {tid} not in mask"
            assert m.accept_token(tid)
    print(f"\nreference-mask comparison: {len(sample)} documents, {steps} masks")


def _variant(dumps, stride, env):
    docs = _load_docs(_FILES[::stride], dumps)
    ids = env.tokenize(d.text for d in docs)
    docs = [d._replace(ids=i) for d, i in zip(docs, ids)]
    bad = []
    for d in docs:
        r = env.run(d.text, d.ids)
        if not r.ok:
            bad.append((d, r))
    return docs, bad


def _dumps_compact_utf8(data):
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")  # lone surrogates cannot be UTF-8 encoded
    except UnicodeEncodeError:
        return None
    return text if _is_strict_json(text) else None


def _dumps_indented(data):
    text = json.dumps(data, indent=2)
    return text if _is_strict_json(text) else None


def test_compact_utf8_variant_on_subset(env):
    """Every 7th file, serialized compactly with raw UTF-8 (no \\u escapes): still accepted."""
    require_data("maskbench")
    docs, bad = _variant(_dumps_compact_utf8, 7, env)
    assert docs
    assert not bad, f"{len(bad)} of {len(docs)} compact UTF-8 instances rejected:\n{_failures_text(bad)}"


def test_indented_variant_on_subset(env):
    """Every 11th file, serialized with indent=2 (newlines and runs of spaces): still accepted."""
    require_data("maskbench")
    docs, bad = _variant(_dumps_indented, 11, env)
    assert docs
    assert not bad, f"{len(bad)} of {len(docs)} indented instances rejected:\n{_failures_text(bad)}"
