"""Helpers of the lazy token-mask cache tests (``test_lazy_cache_*.py``): real tokenizers,
the grammar cases (built-in JSON, llama.cpp GBNF grammars, a fixed MaskBench sample) with
documents in their language, the three compile modes, and walks that compare masks.

The three modes of one grammar:

* ``lazy``: ``GrammarCompiler(info)`` (nothing classified until a fill meets a state);
* ``eager``: ``GrammarCompiler(info, precompute=True)`` (every state classified at compile);
* ``precomputed``: compiled lazily, then ``compiled.precompute(max_threads=2)``.

Every compiler here has ``cache_enabled=False`` so each mode gets its own ``CompiledGrammar``
(a shared one would let one mode's fills classify states for another).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import tokenizers
from conftest import require_data, tokenizer_json

import xmask
from maskutil import GreedyTokens, bit, diff_ids

# tokenizer name -> mask width (None: the tokenizer's own id count); Qwen2.5 is padded
TOKENIZERS = {"llama3": None, "qwen2.5": 151936, "llama2": None}

MODES = ("lazy", "eager", "precomputed")

JSON_DOCS = [
    '{"name": "caf\u00e9 \u4f60\u597d", "list": [1, -2.5e3, true, null, {"x": "a\\"b\\n"}], "e": {}}',
    '[{"id": 17, "tags": ["a", "b"], "ok": false}, [], [[0.5]], "end"]',
    '{"deep": [[[{"k": [[{"v": "\\u00e9"}]]}]]], "n": -0}',
    '{\n  "k": "v",\n  "list": [\n    1,\n    2\n  ]\n}',
    '"just a string \\t with escapes \\\\ and \\/"',
    '[-0.0, 1E+2, 3e-7, 12345678901234567890, 0]',
    '{"a": {"b": {"c": {"d": {"e": [true, false]}}}}}',
    '{"emoji": "\U0001f600 \u6771\u4eac", "": ""}',
]

GBNF_FILES = {
    "json": ("gbnf", "llama.cpp", "grammars", "json.gbnf"),
    "c": ("gbnf", "llama.cpp", "grammars", "c.gbnf"),
    "arithmetic": ("gbnf", "llama.cpp", "grammars", "arithmetic.gbnf"),
    "chess": ("gbnf", "llama.cpp", "grammars", "chess.gbnf"),
    "list": ("gbnf", "llama.cpp", "grammars", "list.gbnf"),
}
GBNF_DOCS = {
    "json": ['{"a": 1, "b": [true, false, null], "c": {"d": "e\\n"}}',
             '{"name": "caf\\u00e9", "x": -0.5, "y": 1.5e3, "z": [1, 2, [3]]}'],
    "c": ["int main(){return 0;}",
          "char c(){while(i<10){i = i+1;}if(a==b){foo ();}else{// hi\n}}"],
    "arithmetic": ["x*(y+2) = z\n", "foo1 +bar_baz*42 = ( 7-x )\n"],
    "chess": ["1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O O-O-O\n"],
    "list": ["- item one\n- item two\n", "- caf\u00e9 \u2615\n- tabs\tand spaces  \n"],
}

# A fixed MaskBench sample: small-to-medium schemas of several collections (60-900 states,
# each eager compile well under a second with Llama-3), every one with a valid instance.
MASKBENCH_SAMPLE = [
    "BFCL_java_10.json",
    "BFCL_parallel_multiple_178.json",
    "Github_easy---o13111.json",
    "Github_easy---o42983.json",
    "Github_easy---o90201.json",
    "Github_hard---o74005.json",
    "Github_medium---o27154.json",
    "Glaiveai2K---calculate_area_95c5c550.json",
    "Glaiveai2K---create_calendar_event_4bdbd8ec.json",
    "Kubernetes---kb_18_Normalized.json",
    "Glaiveai2K---search_jobs_3eee6557.json",
]
MASKBENCH_OPTIONS = {"strict_mode": False, "any_whitespace": True}

# Qwen2.5 and Llama-2 take the cheaper half of the sample (keeps the files' runtime modest)
MASKBENCH_SMALL = [
    "BFCL_java_10.json",
    "BFCL_parallel_multiple_178.json",
    "Github_easy---o90201.json",
    "Github_hard---o74005.json",
    "Github_medium---o27154.json",
    "Glaiveai2K---calculate_area_95c5c550.json",
]

CASES = (["builtin-json"] + [f"gbnf-{g}" for g in GBNF_FILES]
         + [f"mb-{f[:-5]}" for f in MASKBENCH_SAMPLE])


def cases_for(tokenizer: str):
    sample = MASKBENCH_SAMPLE if tokenizer == "llama3" else MASKBENCH_SMALL
    return [c for c in CASES if not c.startswith("mb-") or c[3:] + ".json" in sample]


@functools.cache
def _maskbench_entry(name: str):
    return json.loads(require_data("maskbench", name + ".json").read_text(encoding="utf-8"))


def case_docs(case: str):
    """Documents (text) in the language of ``case``."""
    if case == "builtin-json":
        return list(JSON_DOCS)
    if case.startswith("gbnf-"):
        return list(GBNF_DOCS[case[5:]])
    entry = _maskbench_entry(case[3:])
    docs = [json.dumps(t["data"]) for t in entry["tests"] if t["valid"]]
    assert docs, f"{case}: no valid instance"
    return docs


def compile_case(compiler, case: str):
    if case == "builtin-json":
        return compiler.compile_builtin_json_grammar()
    if case.startswith("gbnf-"):
        return compiler.compile_grammar(require_data(*GBNF_FILES[case[5:]]).read_text(encoding="utf-8"))
    return compiler.compile_json_schema(_maskbench_entry(case[3:])["schema"], **MASKBENCH_OPTIONS)


class Tok:
    """One tokenizer: TokenizerInfo, tokenizers.Tokenizer, and a tokenization of any text."""

    def __init__(self, name: str):
        path = tokenizer_json(name)
        self.name = name
        self.info = xmask.TokenizerInfo.from_huggingface(path.parent, vocab_size=TOKENIZERS[name])
        self.hf = tokenizers.Tokenizer.from_file(str(path))
        self.vocab = self.info.decoded_vocab
        self.words = (self.info.vocab_size + 31) // 32
        self.stops = list(self.info.stop_token_ids)
        self.greedy = GreedyTokens(self.info, name)

    def encode(self, text: str):
        """The tokenizer's own ids when they decode to exactly ``text``; otherwise (Llama-2's
        sentencepiece prepends a space) a greedy longest match over the decoded vocabulary."""
        ids = self.hf.encode(text, add_special_tokens=False).ids
        data = text.encode("utf-8")
        if b"".join(self.vocab[i] for i in ids) == data:
            return ids
        return self.greedy.ids(data)

    def compiler(self, **kw):
        kw.setdefault("max_threads", 2)
        return xmask.GrammarCompiler(self.info, cache_enabled=False, **kw)

    def bitmask(self, rows: int) -> np.ndarray:
        """A bitmask filled with a pattern no real row has (catches words left unwritten)."""
        return np.full((rows, self.words), 0x5A5A5A5A, dtype=np.int32)


@functools.cache
def tok(name: str) -> Tok:
    return Tok(name)


def compile_modes(t: Tok, case: str, modes=MODES) -> dict:
    """``{mode: CompiledGrammar}``, each compiled separately (see the module docstring)."""
    out = {}
    for mode in modes:
        if mode == "lazy":
            out[mode] = compile_case(t.compiler(), case)
        elif mode == "eager":
            out[mode] = compile_case(t.compiler(precompute=True), case)
        elif mode == "precomputed":
            compiled = compile_case(t.compiler(), case)
            assert compiled.precompute(max_threads=2) is compiled
            out[mode] = compiled
        else:
            raise ValueError(mode)
    return out


def reference_step(step: int, n_steps: int, every: int) -> bool:
    """Compare with the reference at the first steps, every ``every``-th and the last."""
    return step < 6 or step % every == 0 or step == n_steps


def walk_modes(t: Tok, compiled: dict, ids, where: str, every: int = 1) -> int:
    """Walk ``ids`` with one matcher per mode: at each step every mode's mask is bit-identical
    to the others' and contains the next token, and (per ``reference_step``) equals the slow
    reference; at the end a stop token is allowed, accepted and terminates every matcher.
    Returns the number of reference comparisons."""
    names = list(compiled)
    ms = [xmask.GrammarMatcher(compiled[n]) for n in names]
    k = len(names)
    checked = 0
    for step in range(len(ids) + 1):
        bm = t.bitmask(k + 1)
        for i, m in enumerate(ms):
            m.fill_next_token_bitmask(bm, i)
        for i in range(1, k):
            assert np.array_equal(bm[0], bm[i]), (
                f"{where} step {step}: {names[i]} mask != {names[0]} mask, "
                f"ids {diff_ids(bm[[0]], bm[[i]])[:10]}")
        if reference_step(step, len(ids), every):
            ms[0]._reference_fill_next_token_bitmask(bm, k)
            assert np.array_equal(bm[0], bm[k]), (
                f"{where} step {step}: {names[0]} mask != reference, ids "
                + ", ".join(f"{x}:{t.vocab[x]!r}" for x in diff_ids(bm[[0]], bm[[k]])[:10]))
            checked += 1
        if step == len(ids):
            break
        tid = ids[step]
        assert bit(bm, tid), f"{where} step {step}: next token {tid} {t.vocab[tid]!r} masked"
        for name, m in zip(names, ms):
            assert m.accept_token(tid), f"{where} step {step}: {name} rejected token {tid}"
    stop = t.stops[0]
    assert bit(bm, stop), f"{where}: stop token not allowed at the end"
    for name, m in zip(names, ms):
        assert m.accept_token(stop) and m.is_terminated(), f"{where}: {name} did not terminate"
    return checked


def record_walk(compiled, ids, words: int) -> np.ndarray:
    """The mask before each token of ``ids`` and at the end, one row per step."""
    m = xmask.GrammarMatcher(compiled)
    out = np.full((len(ids) + 1, words), 0x5A5A5A5A, dtype=np.int32)
    for step, tid in enumerate(ids):
        m.fill_next_token_bitmask(out, step)
        assert m.accept_token(tid), f"token {step} ({tid}) rejected"
    m.fill_next_token_bitmask(out, len(ids))
    return out


def record_key(r):
    """A cache record without ``shared`` and ``bytes`` (which entry is stored first depends on
    the order states were classified in)."""
    return (r.rule, r.state, r.accepted, r.rejected, r.uncertain, r.storage)

