"""Bounded JSON strings (``maxLength`` / ``minLength``) keep exact masks through their bound.

From 64 characters on, a bounded string is a chain of one state per character position that
reads ASCII itself and calls one shared rule for any other character (a multi-byte UTF-8
character or an escape), which returns to the next position (json_schema/strings.py).  The
classifier follows that call to accept plain tokens without a walk (runtime/_plain_depth.pyx),
a fill skips the callee's own top (its caller's entry covers it, runtime/_fill.pyx), and the
callee, called from every position, is classified up to its end only (runtime/_mask_cache.pyx).
Shorter bounds keep a chain of ~20 states per position; longer ones are chunked.

Here documents of mixed text (ASCII, short and ``\\uXXXX`` escapes, 2-, 3- and 4-byte
characters, surrogate pairs) are generated up to and past the bound and walked token by token
on real tokenizers; the mask equals the slow reference at the interesting boundaries (the
start, inside a character or an escape, near the bound and near chunk ends), and no fill
crosses a runtime limit.
"""

import json
import random

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json
from maskutil import bit, diff_ids

import xmask

PIECES = ["the", " quick", " fox", "\n", '"', "\\", "/", "\t", "\x01", "é", "ß", "中文", "日本語",
          "😀", "🎉", "𝔘", "\u2028", " naïve", "Ω", "\x7f"]

# (minLength, maxLength, characters in the document, its tokens' spelling)
CASES = [
    (0, 1, 1, False), (0, 2, 2, True), (0, 5, 5, False), (0, 40, 40, True),
    (0, 64, 64, False), (0, 255, 255, True), (0, 256, 256, False), (0, 257, 257, True),
    (0, 1000, 1000, False), (0, 5000, 5000, True),
    (70, 100, 100, False), (70, 100, 69, True),      # one below minLength: cannot close
    (300, None, 330, True), (2, 3, 1, False),
    (0, 12000, 12000, False),                        # chunked (beyond the one-state chain)
]
OVER = [(0, 5), (0, 64), (0, 257), (0, 1000)]  # one character past the bound: rejected


def _text(n: int, seed: int) -> str:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        out.extend(rng.choice(PIECES))
    return "".join(out[:n])


def _json_char_starts(doc: bytes):
    """Byte offsets in ``doc`` (a JSON string) where a JSON character starts, and the number of
    characters before each such offset."""
    starts, i, k = {1: 0}, 1, 0
    while i < len(doc) - 1:
        b = doc[i]
        if b == 0x5C:
            if doc[i + 1] == ord("u"):
                cp = int(doc[i + 2:i + 6], 16)
                i += 12 if 0xD800 <= cp < 0xDC00 else 6
            else:
                i += 2
        else:
            i += 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        k += 1
        starts[i] = k
    return starts


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def setup(request):
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json(request.param)))
    size = 151936 if request.param == "qwen2.5" else None  # Qwen2.5: the padded model width
    info = xmask.TokenizerInfo.from_huggingface(tok, vocab_size=size)
    return request.param, tok, info, xmask.GrammarCompiler(info, cache_enabled=False)


def _schema(lo, hi):
    s = {"type": "string"}
    if lo:
        s["minLength"] = lo
    if hi is not None:
        s["maxLength"] = hi
    return s


def _walk(setup, lo, hi, n, ascii_only, seed):
    """Walk the document of ``n`` characters; returns (tokens accepted, tokens, matcher)."""
    name, tok, info, compiler = setup
    doc = json.dumps(_text(n, seed), ensure_ascii=ascii_only).encode()
    ids = tok.encode(doc.decode(), add_special_tokens=False).ids
    assert tok.decode(ids).encode() == doc
    starts = _json_char_starts(doc)
    ends, off = [], 0
    for t in ids:
        off += len(info.decoded_vocab[t])
        ends.append(off)
    assert ends[-1] == len(doc)
    bound = hi if hi is not None else lo
    # interesting boundaries: the start, inside a character or an escape, near the bound
    # (or minLength), near the chunk ends of a chunked bound, and a few others
    check, stop = {0, 1}, len(ids)
    if hi is not None and hi > 10_000:  # chunked: walked through the first two chunk ends only
        chunk = max(int(hi ** 0.5), 256)
        for edge in (chunk, 2 * chunk):
            check.update(k for k in range(1, len(ids)) if edge - 6 <= starts.get(ends[k - 1], -99) <= edge + 1)
        stop = max(check) + 1
    else:
        near = [k for k in range(1, len(ids)) if starts.get(ends[k - 1], -99) >= bound - 12
                or ends[k - 1] >= len(doc) - 1]
        check.update(near[-8:])
    mids = [k for k in range(1, stop) if 0 < ends[k - 1] < len(doc) - 1 and ends[k - 1] not in starts]
    check.update(random.Random(seed).sample(mids, min(6, len(mids))))
    check.update(range(0, stop, max(1, stop // 4)))
    m = xmask.GrammarMatcher(compiler.compile_json_schema(_schema(lo, hi)))
    fast = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
    ref = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
    for k, t in enumerate(ids[:stop]):
        m.fill_next_token_bitmask(fast)
        assert m.limit_error is None, (name, hi, k, m.limit_error)
        if k in check:
            m._reference_fill_next_token_bitmask(ref)
            assert np.array_equal(fast, ref), (name, lo, hi, k, diff_ids(fast, ref)[:10])
        if not bit(fast, t):
            m._reference_fill_next_token_bitmask(ref)
            assert np.array_equal(fast, ref), (name, lo, hi, k, diff_ids(fast, ref)[:10])
            return k, ids, m
        assert m.accept_token(t)
    if stop < len(ids):
        return stop, ids[:stop], m
    m.fill_next_token_bitmask(fast)
    m._reference_fill_next_token_bitmask(ref)
    assert np.array_equal(fast, ref), (name, lo, hi, "end", diff_ids(fast, ref)[:10])
    return len(ids), ids, m


@pytest.mark.parametrize("lo,hi,n,ascii_only", CASES)
def test_bounded_string_walk_equals_reference(setup, lo, hi, n, ascii_only):
    done, ids, m = _walk(setup, lo, hi, n, ascii_only, seed=n + lo)
    if hi is not None and hi > 10_000:
        assert done == len(ids)  # (walked through the chunk ends only)
    elif n >= lo and (hi is None or n <= hi):
        assert done == len(ids) and m.is_completed()
    else:
        assert done < len(ids) or not m.is_completed()  # too short: the quote is not allowed


@pytest.mark.parametrize("lo,hi", OVER)
def test_one_character_past_the_bound_is_rejected(setup, lo, hi):
    done, ids, _ = _walk(setup, lo, hi, hi + 1, False, seed=hi)
    assert done < len(ids)  # the document cannot be finished


def test_long_bounds_have_one_state_per_position(setup):
    # the shared tail stays one called rule (not inlined back): ~1 state per position
    compiler = setup[3]
    short = compiler.compile_json_schema(_schema(0, 1000))._automaton
    assert short.n_states < 1000 + 200
    assert "str_char_tail" in short.rule_names
    old = compiler.compile_json_schema(_schema(0, 40))._automaton
    assert "str_char_tail" not in old.rule_names  # short bounds: the former chain


@pytest.mark.parametrize("ascii_only", [False, True])
def test_every_boundary_same_masks_with_and_without_the_shortcuts(setup, ascii_only):
    # every token boundary of a mixed document (inside characters and escapes too, where the
    # character tail's (state, position) pair entries are used): the masks of a grammar
    # classified with the plain-text shortcuts equal those of one classified by full walks
    from xmask.runtime import _classify

    name, tok, info, compiler = setup
    doc = json.dumps(_text(300, 7), ensure_ascii=ascii_only)
    ids = tok.encode(doc, add_special_tokens=False).ids
    rows = []
    for fast in (True, False):
        try:
            _classify.set_plain_fast_path(fast)
            compiled = compiler.compile_json_schema(_schema(0, 300))
            m = xmask.GrammarMatcher(compiled)
            bm = np.asarray(xmask.allocate_token_bitmask(len(ids) + 1, info.vocab_size))
            for k, t in enumerate(ids):
                m.fill_next_token_bitmask(bm, k)
                assert m.accept_token(t)
            m.fill_next_token_bitmask(bm, len(ids))
            rows.append(bm.copy())
            # the pair entries are part of the grammar's memory, apart from the states'
            stats = compiled.cache_stats()
            assert stats.memory["pair_entries"] > 0
            assert sum(stats.memory.values()) == compiled.memory_size_bytes
            assert sum(r.stored_bytes for r in stats) == stats.memory["entry_payloads"]
        finally:
            _classify.set_plain_fast_path(True)
    for k in range(len(ids) + 1):
        assert np.array_equal(rows[0][k:k + 1], rows[1][k:k + 1]), (name, k, diff_ids(rows[0][k:k + 1], rows[1][k:k + 1])[:10])
