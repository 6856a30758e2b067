"""CompiledGrammar: automaton + adaptive mask cache for one grammar and one tokenizer."""

from __future__ import annotations

import time
from typing import Any, Dict

from .._deadline import compile_deadline
from .._switch_interval import responsive_switching
from ..grammar import ir
from ..grammar_api import Grammar
from ..limits import DEFAULT_LIMITS
from ..runtime._tables import AutomatonTables
from .automaton import AutomatonLimits, build_automaton
from .grammar_source import source_grammar
from .special_literals import with_special_literals
from .token_rules import lower_token_sets, token_set_bits
from .mask_cache import (
    cache_records, cache_summary, new_mask_cache, precompute_mask_cache, usable_cpus,
)


class CompiledGrammar:
    """An immutable compiled grammar, shareable by any number of matchers and threads.

    Create one with ``GrammarCompiler.compile_grammar`` (never directly).

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')
        >>> cg.cache_summary()["classified"]    # lazy: fills classify states on demand
        0
        >>> cg.precompute().cache_stats()[0].rule, cg.memory_size_bytes > 0
        ('root', True)
    """

    __slots__ = (
        "_grammar",
        "_tokenizer_info",
        "_automaton",
        "_automaton_tables",
        "_vocab_tables",
        "_mask_cache",
        "_compile_seconds",
        "_limits",
        "_rest",  # a lazy JSON Schema compile's LazyRest (lazy_schema.py), else None
    )

    def __init__(self, *args, **kwargs):
        raise TypeError("CompiledGrammar is created by GrammarCompiler.compile_grammar()")

    @classmethod
    def _build(cls, grammar, tokenizer_info, vocab_tables, max_threads=1, precompute=False,
               limits=None, stubs=()) -> "CompiledGrammar":
        # precompute=False leaves the token-mask cache empty: fills classify states on demand
        t0 = time.perf_counter()
        # literals spelling a special token's text may also be that token (special_literals)
        # its walk also lists each rule's references when the grammar needs no lowering
        refs: Dict[str, Any] = {}
        lowered, has_tokens = with_special_literals(grammar, tokenizer_info, refs)
        lowered, token_rules = lower_token_sets(lowered, tokenizer_info) if has_tokens \
            else (lowered, [])
        automaton = build_automaton(
            lowered, AutomatonLimits() if limits is None else AutomatonLimits.from_compile_limits(limits),
            token_rules=[name for name, _ in token_rules], refs=refs or None,
            threads=min(max_threads, usable_cpus()), stubs=stubs)
        automaton.token_bits = token_set_bits(token_rules, tokenizer_info.vocab_size)
        at = AutomatonTables(automaton)
        cache = new_mask_cache(automaton, limits)
        if precompute:
            precompute_mask_cache(cache, automaton, at, vocab_tables, max_threads=max_threads)
        return cls._assemble(grammar, tokenizer_info, automaton, at, vocab_tables, cache,
                             time.perf_counter() - t0, limits)

    @classmethod
    def _assemble(cls, grammar, tokenizer_info, automaton, automaton_tables, vocab_tables,
                  mask_cache, compile_seconds, limits=None) -> "CompiledGrammar":
        self = object.__new__(cls)
        object.__setattr__(self, "_grammar", grammar)
        object.__setattr__(self, "_tokenizer_info", tokenizer_info)
        object.__setattr__(self, "_automaton", automaton)
        object.__setattr__(self, "_automaton_tables", automaton_tables)
        object.__setattr__(self, "_vocab_tables", vocab_tables)
        object.__setattr__(self, "_mask_cache", mask_cache)
        object.__setattr__(self, "_compile_seconds", compile_seconds)
        # the limits a later precompute() honours (its deadline): the compiler's, else defaults
        object.__setattr__(self, "_limits", DEFAULT_LIMITS if limits is None else limits)
        object.__setattr__(self, "_rest", None)
        return self

    def _with_rest(self, rest) -> "CompiledGrammar":
        # (lazy_schema: this object holds the first part until `rest` installs the whole)
        object.__setattr__(self, "_rest", rest)
        return self

    def _install_whole(self, full) -> None:
        # (lazy_schema.LazyRest, under its lock) this object becomes the whole grammar's
        for name in ("_grammar", "_automaton", "_automaton_tables", "_mask_cache"):
            object.__setattr__(self, name, getattr(full, name))
        object.__setattr__(self, "_compile_seconds", self._compile_seconds + full._compile_seconds)

    def _resolved(self) -> "CompiledGrammar":
        """``self``, with the whole grammar built and installed first if it is still pending (a
        JSON Schema compiled in two parts: ``lazy_schema.py``).  Every public method but
        ``memory_size_bytes`` and ``compile_seconds`` (what is held and spent so far) answers
        for the whole grammar, so a lazy grammar is observably the same as an eager one."""
        if self._rest is not None:
            self._rest.ensure(self)
        return self

    def _matcher_tables(self, whole=False):
        """``(automaton tables, vocabulary tables, mask cache, captured grammar or None,
        provisional)`` for a new matcher: the first part's while the whole grammar is pending
        and no walk met a stub (``provisional``: the matcher must move to the whole grammar
        before anything but a fill at the start), else (and with ``whole``) the whole's."""
        rest = self._rest
        if rest is not None:
            first = rest.first  # (one read: the tuple or None, never half of an install)
            if first is not None and not whole and not first[0].stub_hit:
                return first + (None, True)
            rest.ensure(self)
        return (self._automaton_tables, self._vocab_tables, self._mask_cache,
                self._captured_grammar(), False)

    def _hold_source(self, source) -> None:
        # the compiler, before it hands the grammar out: keep how to rebuild the IR, not the
        # IR itself (its objects would be scanned by every full GC collection; grammar_source).
        # A grammar with captures keeps its IR: every matcher's capture log replays on it.
        if self._rest is not None and self._rest.first is not None:
            self._rest.source = source  # for the whole grammar, once built
            object.__setattr__(self, "_grammar", source)
            return
        if not self._grammar.captures:
            object.__setattr__(self, "_grammar", source)

    def _captured_grammar(self):
        """The source grammar IR when it has captures (matchers log them), else None; never
        rebuilds (a dropped IR had none)."""
        g = self._grammar
        return g if isinstance(g, ir.Grammar) and g.captures else None

    # ---- serialization -----------------------------------------------------------------

    def serialize_json(self) -> str:
        """This compiled grammar as a JSON string (XGrammar's name and role).

        The text holds the grammar, the automaton, the token-mask cache and the cache records
        in a versioned, checksummed envelope (:mod:`xmask.serialization.format`), plus the
        ``vocab_hash`` of the tokenizer it was compiled for; the tokenizer itself is not
        included (pass it to :meth:`deserialize_json`).

        Example::

            >>> import xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')
            >>> again = xmask.CompiledGrammar.deserialize_json(cg.serialize_json(), info)
            >>> again.cache_stats() == cg.cache_stats()
            True
        """
        from ..serialization.compiled_codec import automaton_to_body, mask_cache_to_body
        from ..serialization.format import dump_document
        from ..serialization.grammar_codec import grammar_to_body

        self._resolved()
        info = self._tokenizer_info
        body: Dict[str, Any] = {
            "tokenizer": {"vocab_hash": info.vocab_hash, "vocab_size": info.vocab_size},
            "grammar": grammar_to_body(source_grammar(self._grammar)),
            "automaton": automaton_to_body(self._automaton),
            "mask_cache": mask_cache_to_body(self._mask_cache.export()),
            "compile_seconds": float(self._compile_seconds),
        }
        return dump_document("compiled_grammar", body)

    @staticmethod
    def deserialize_json(json_str, tokenizer_info) -> "CompiledGrammar":
        """Rebuild a compiled grammar from :meth:`serialize_json` text, for ``tokenizer_info``.

        Masks are bit-identical to the original's.  The tokenizer must be the one the grammar
        was compiled for (same ``vocab_hash``); its vocabulary tables are shared with every
        compiler and grammar of the same tokenizer, not rebuilt.

        Raises
        ------
        DeserializeVersionError
            Data written by another serialization format version (both versions named).
        DeserializeFormatError
            Corrupt, truncated or malformed data, or another kind of object (the field and
            the problem named); ``TokenizerMismatchError`` (a subclass) when ``tokenizer_info``
            is not the grammar's tokenizer (both ``vocab_hash`` values named).

        Example::

            >>> text = cg.serialize_json()                                  # doctest: +SKIP
            >>> xmask.CompiledGrammar.deserialize_json(text, info)          # doctest: +SKIP
            <CompiledGrammar rules=1 states=2 ...>
        """
        from ..serialization.compiled_codec import automaton_from_body, mask_cache_from_body
        from ..serialization.fields import get_field, get_int, get_str
        from ..serialization.format import TokenizerMismatchError, format_error, load_document
        from ..grammar.ir import grammar_from_body
        from ..tokenizer.info import TokenizerInfo
        from .vocab_memo import shared_vocab_tables

        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError("CompiledGrammar.deserialize_json needs a TokenizerInfo, got "
                            f"{type(tokenizer_info).__name__}")
        where = "CompiledGrammar"
        body = load_document(json_str, "compiled_grammar")
        tok = get_field(body, "tokenizer", where)
        expected = get_str(tok, "vocab_hash", where + ".tokenizer")
        size = get_int(tok, "vocab_size", where + ".tokenizer")
        if expected != tokenizer_info.vocab_hash:
            raise TokenizerMismatchError(
                f"cannot deserialize CompiledGrammar: it was compiled for the tokenizer with "
                f"vocab_hash {expected} (vocab_size {size}), but the given TokenizerInfo has "
                f"vocab_hash {tokenizer_info.vocab_hash} (vocab_size "
                f"{tokenizer_info.vocab_size}); deserialize it with its own tokenizer",
                expected, tokenizer_info.vocab_hash,
            )
        grammar = grammar_from_body(get_field(body, "grammar", where), where + ".grammar")
        automaton = automaton_from_body(get_field(body, "automaton", where), where + ".automaton")
        vocab_tables = shared_vocab_tables(tokenizer_info)
        arrays = mask_cache_from_body(get_field(body, "mask_cache", where),
                                      where + ".mask_cache", automaton, vocab_tables)
        mask_cache = new_mask_cache(automaton)
        mask_cache.load(arrays)
        seconds = get_field(body, "compile_seconds", where)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise format_error(where + ".compile_seconds", "expected a number")
        return CompiledGrammar._assemble(grammar, tokenizer_info, automaton,
                                         AutomatonTables(automaton), vocab_tables, mask_cache,
                                         float(seconds))

    def __reduce__(self):
        # pickles carry the tokenizer (pickle stores a shared TokenizerInfo once per dump)
        return (_unpickle_compiled_grammar, (self.serialize_json(), self._tokenizer_info))

    def __setattr__(self, name, value):
        raise AttributeError("CompiledGrammar is immutable")

    def __delattr__(self, name):
        raise AttributeError("CompiledGrammar is immutable")

    @property
    def grammar(self):
        """The source ``Grammar`` (an ``xmask.Grammar``; rebuilt from the compiled text or schema
        on each access when the compiler parsed it, see :mod:`xmask.compiler.grammar_source`)."""
        return Grammar.of(source_grammar(self._resolved()._grammar))

    @property
    def tokenizer_info(self):
        """The ``TokenizerInfo`` this grammar was compiled for."""
        return self._tokenizer_info

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by this grammar: automaton tables + token-mask cache (the tokenizer's
        sorted-vocabulary tables are shared by all grammars of a compiler and not counted).
        Grows as fills classify states (see :meth:`cache_summary`) and, for a JSON Schema
        compiled in two parts, when the whole grammar is built; ``cache_stats().memory``
        lists the whole grammar's parts."""
        return self._automaton_tables.nbytes + self._mask_cache.nbytes

    @property
    def compile_seconds(self) -> float:
        """Seconds the compile took: a JSON Schema compiled in two parts
        (:mod:`xmask.compiler.lazy_schema`) counts the first part, plus the whole grammar's
        build once it is done (neither property builds it)."""
        return self._compile_seconds

    def precompute(self, max_threads: int = 1, progress=None) -> "CompiledGrammar":
        """Classify every state the token-mask cache has not classified yet (the warm-up mode)
        and return ``self``.

        A compiled grammar starts with an empty cache and the first fill that meets a state
        classifies it (the cold path: fast time to first mask).  A server that compiles at
        warm-up can pay everything up front instead, on ``max_threads`` C threads (real
        parallelism: no GIL is held while classifying; never more threads than the CPUs the
        process may use, all at a lower OS priority while the caller waits, so a server
        thread that wakes up meanwhile gets a core at once).  Masks are identical either way.
        Bounded like a compile: past ``CompileLimits.max_compile_seconds`` of the compiler
        that built the grammar (the default limits for a deserialized one) it raises
        ``GrammarLimitError``, keeping what it classified.  Idempotent; safe while matchers
        use the grammar.  ``progress(done, total)`` (optional, e.g. a progress bar's update)
        is called as the walks advance: ``done`` of ``total`` distinct walks finished.

        Example::

            >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')  # doctest: +SKIP
            >>> cg.precompute(max_threads=2).cache_summary()["pending"]            # doctest: +SKIP
            0
        """
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1:
            raise ValueError(f"max_threads must be an int >= 1, got {max_threads!r}")
        if progress is not None and not callable(progress):
            raise TypeError(f"progress must be a callable (done, total), got {progress!r}")
        self._resolved()
        # its Python parts (state equivalence) keep waiting threads responsive as a compile's do
        with responsive_switching(), compile_deadline(self._limits.max_compile_seconds):
            precompute_mask_cache(self._mask_cache, self._automaton, self._automaton_tables,
                                  self._vocab_tables, max_threads=max_threads, progress=progress)
        return self

    def cache_summary(self) -> dict:
        """How much of the token-mask cache is built: ``top_states`` (states that can be on top
        of the stack, each needs an entry), ``classified``, ``pending`` (not classified yet:
        the first fill that meets one classifies it), ``entries`` (distinct stored entries:
        identical ones are stored once) and ``bytes`` (their payload).

        Example::

            >>> s = cg.cache_summary()                                   # doctest: +SKIP
            >>> s["classified"] + s["pending"] == s["top_states"]        # doctest: +SKIP
            True
        """
        self._resolved()
        return cache_summary(self._mask_cache, self._automaton)

    def cache_stats(self):
        """Per-state cache records for every state classified so far, in state order, with the
        memory they belong to (a :class:`~xmask.compiler.mask_cache.CacheStats`: a list).

        Each :class:`~xmask.compiler.mask_cache.StateCacheRecord` has the state's ``rule`` and
        ``position`` (a dotted item: the shortest input from the rule's start, ``•``, what the
        state reads next), its accepted / rejected / uncertain token counts, the entry's
        ``storage`` kind and payload ``bytes``, and ``shared`` / ``entry_owner`` (identical
        entries are stored once, by the lowest state: ``stored_bytes`` counts each once).
        ``stats.memory`` splits :attr:`memory_size_bytes` into parts that add up to it and
        ``stats.totals`` counts states, entries and shared ones.  Call :meth:`precompute`
        first to see every state that can be on top of the stack; ``xmask.inspect`` turns the
        records into a pandas DataFrame and plots.

        Example::

            >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "[" [0-9]+ "]"')  # doctest: +SKIP
            >>> stats = cg.precompute().cache_stats()                        # doctest: +SKIP
            >>> [(r.rule, r.position) for r in stats]                        # doctest: +SKIP
            [('root', '• "["'), ('root', '"[" • [0-9]'), ('root', '"[" [0-9] • [0-9\\]]')]
            >>> sum(stats.memory.values()) == cg.memory_size_bytes           # doctest: +SKIP
            True
        """
        self._resolved()
        return cache_records(self._mask_cache, self._automaton, self._automaton_tables)

    def __repr__(self) -> str:
        a = self._resolved()._automaton
        s = self.cache_summary()
        return (
            f"<CompiledGrammar rules={len(a.rule_names)} states={a.n_states} "
            f"classified_states={s['classified']}/{s['top_states']} "
            f"bytes={self.memory_size_bytes}>"
        )


def _unpickle_compiled_grammar(json_str, tokenizer_info) -> CompiledGrammar:
    return CompiledGrammar.deserialize_json(json_str, tokenizer_info)
