"""Functions run in ``multiprocessing`` spawn workers by the serialization tests (a spawn child
imports them by module name, so they cannot live in a test file)."""

import pickle

import numpy as np


def masks_in_worker(payload: bytes, token_ids):
    """Unpickle a compiled grammar, walk ``token_ids``, return every fill as bytes."""
    import xmask

    compiled = pickle.loads(payload)
    assert isinstance(compiled, xmask.CompiledGrammar)
    matcher = xmask.GrammarMatcher(compiled)
    bm = np.full((1, (compiled.tokenizer_info.vocab_size + 31) // 32), -1, np.int32)
    out = []
    for tid in token_ids:
        matcher.fill_next_token_bitmask(bm)
        out.append(bm.tobytes())
        assert matcher.accept_token(tid)
    matcher.fill_next_token_bitmask(bm)
    out.append(bm.tobytes())
    return out


def compile_into_cache(tokenizer_path: str, cache_dir: str, schema: dict, rounds: int):
    """Compile ``schema`` with a disk-cached compiler ``rounds`` times (fresh compiler each
    round, so every round reads or writes the directory); return the cache counters."""
    import xmask

    info = xmask.TokenizerInfo.from_huggingface(tokenizer_path)
    totals = {}
    for _ in range(rounds):
        compiler = xmask.GrammarCompiler(info, cache_dir=cache_dir, max_threads=1)
        compiler.compile_json_schema(schema)
        for k, v in compiler.cache_info().items():
            if isinstance(v, int):
                totals[k] = totals.get(k, 0) + v
    return totals


def compile_with_pickled_compiler(payload: bytes, schema: dict, token_ids):
    """Unpickle a GrammarCompiler, compile ``schema`` with it, return the walk's masks and the
    compiler's configuration as seen in the worker."""
    compiler = pickle.loads(payload)
    masks = masks_in_worker(pickle.dumps(compiler.compile_json_schema(schema)), token_ids)
    config = (compiler.cache_limit_bytes, compiler.cache_info()["cache_dir"],
              compiler.cache_info()["memory_entries"])
    return masks, config
