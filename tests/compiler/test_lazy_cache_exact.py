"""The lazy token-mask cache is exact in every mode (issue 10, "Tests").

For the built-in JSON grammar, five llama.cpp GBNF grammars and a fixed MaskBench sample, on
Llama-3, Qwen2.5 (mask width 151,936) and Llama-2 (those two on the cheaper half of
the sample), each grammar is compiled three ways --
lazily (nothing classified until a fill meets a state), eagerly (``precompute=True``) and
lazily then ``precompute(max_threads=2)`` -- and real documents are walked token by token with
one matcher per mode: at every step the three masks are bit-identical, equal the slow
reference mask (every token tried on the byte-level parser), and allow the next token.
Afterwards the fully classified caches agree: same ``cache_summary()`` and ``cache_stats()``
for the eager and the precomputed grammar, and the walked lazy grammar, once precomputed, has
the same per-state records and entries as the eager one.
"""

import pytest

from lazy_walks import TOKENIZERS, cases_for, case_docs, compile_modes, record_key, tok, walk_modes

pytest.importorskip("tokenizers")

# the modes are compared at every step; the reference (a few ms a fill) at the first six steps,
# every fourth and the last
REFERENCE_EVERY = 4


COMBOS = [(t, c) for t in TOKENIZERS for c in cases_for(t)]


@pytest.mark.parametrize("tokenizer,case", COMBOS, ids=[f"{t}-{c}" for t, c in COMBOS])
def test_masks_equal_reference_in_every_mode(tokenizer, case):
    t = tok(tokenizer)
    compiled = compile_modes(t, case)
    checked = 0
    for i, doc in enumerate(case_docs(case)):
        checked += walk_modes(t, compiled, t.encode(doc), f"[{tokenizer} {case} doc {i}]",
                              every=REFERENCE_EVERY)
    assert checked > 5

    lazy, eager, pre = compiled["lazy"], compiled["eager"], compiled["precomputed"]
    s_eager, s_pre, s_lazy = eager.cache_summary(), pre.cache_summary(), lazy.cache_summary()
    assert s_eager["pending"] == 0 and s_eager["classified"] == s_eager["top_states"]
    assert s_pre == s_eager
    assert pre.cache_stats() == eager.cache_stats()
    assert pre.memory_size_bytes == eager.memory_size_bytes
    # the walks classified some states of the lazy grammar, not more than exist
    assert s_lazy["top_states"] == s_eager["top_states"]
    assert s_lazy["classified"] + s_lazy["pending"] == s_lazy["top_states"]
    assert 0 < s_lazy["classified"] <= s_lazy["top_states"]
    assert len(lazy.cache_stats()) == s_lazy["classified"]

    # classifying the rest after the walks gives the eager grammar's records and entries
    assert lazy.precompute(max_threads=2) is lazy
    s_done = lazy.cache_summary()
    assert s_done["pending"] == 0 and s_done["classified"] == s_eager["classified"]
    assert s_done["entries"] == s_eager["entries"], (s_done, s_eager)
    assert sorted(map(record_key, lazy.cache_stats())) == sorted(map(record_key, eager.cache_stats()))
