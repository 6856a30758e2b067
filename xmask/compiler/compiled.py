"""CompiledGrammar: automaton + adaptive mask cache for one grammar and one tokenizer."""

from __future__ import annotations

import time

from ..runtime._tables import AutomatonTables
from .automaton import AutomatonLimits, build_automaton
from .mask_cache import build_mask_cache, build_unclassified_cache


class CompiledGrammar:
    """An immutable compiled grammar, shareable by any number of matchers and threads.

    Create one with ``GrammarCompiler.compile_grammar`` (never directly).

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')
        >>> cg.memory_size_bytes > 0, cg.cache_stats()[0].rule
        (True, 'root')
    """

    __slots__ = (
        "_grammar",
        "_tokenizer_info",
        "_automaton",
        "_automaton_tables",
        "_vocab_tables",
        "_mask_cache_tables",
        "_records",
        "_compile_seconds",
    )

    def __init__(self, *args, **kwargs):
        raise TypeError("CompiledGrammar is created by GrammarCompiler.compile_grammar()")

    @classmethod
    def _build(cls, grammar, tokenizer_info, vocab_tables, max_threads=1,
               classify_tokens=True, limits=None) -> "CompiledGrammar":
        # classify_tokens=False skips the token-mask cache (see build_unclassified_cache): same
        # acceptance and exact masks, slow fills; used to score many grammars quickly.
        t0 = time.perf_counter()
        self = object.__new__(cls)
        automaton = build_automaton(
            grammar, AutomatonLimits() if limits is None else AutomatonLimits.from_compile_limits(limits))
        at = AutomatonTables(automaton)
        if classify_tokens:
            ct, records = build_mask_cache(automaton, at, vocab_tables, max_threads=max_threads)
        else:
            ct, records = build_unclassified_cache(automaton, vocab_tables), []
        object.__setattr__(self, "_grammar", grammar)
        object.__setattr__(self, "_tokenizer_info", tokenizer_info)
        object.__setattr__(self, "_automaton", automaton)
        object.__setattr__(self, "_automaton_tables", at)
        object.__setattr__(self, "_vocab_tables", vocab_tables)
        object.__setattr__(self, "_mask_cache_tables", ct)
        object.__setattr__(self, "_records", tuple(records))
        object.__setattr__(self, "_compile_seconds", time.perf_counter() - t0)
        return self

    def __setattr__(self, name, value):
        raise AttributeError("CompiledGrammar is immutable")

    def __delattr__(self, name):
        raise AttributeError("CompiledGrammar is immutable")

    @property
    def grammar(self):
        """The source ``Grammar``."""
        return self._grammar

    @property
    def tokenizer_info(self):
        """The ``TokenizerInfo`` this grammar was compiled for."""
        return self._tokenizer_info

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by this grammar: automaton tables + token-mask cache (the tokenizer's
        sorted-vocabulary tables are shared by all grammars of a compiler and not counted)."""
        return self._automaton_tables.nbytes + self._mask_cache_tables.nbytes

    @property
    def compile_seconds(self) -> float:
        return self._compile_seconds

    def cache_stats(self):
        """Per-state cache records (rule, state, accepted/rejected/uncertain counts, storage
        kind, bytes, shared) for every state that can be on top of the stack."""
        return list(self._records)

    def __repr__(self) -> str:
        a = self._automaton
        unc = sum(r.uncertain for r in self._records)
        return (
            f"<CompiledGrammar rules={len(a.rule_names)} states={a.n_states} "
            f"cached_states={len(self._records)} uncertain_total={unc} "
            f"bytes={self.memory_size_bytes}>"
        )
