"""GrammarCompiler: compiles grammars for one tokenizer and caches the results."""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Optional, Union

from .._deadline import compile_deadline
from .._gc_pause import gc_paused
from .._recursion import deep_recursion
from .._switch_interval import responsive_switching
from ..limits import DEFAULT_LIMITS, CompileLimits
from ..grammar import ir
from ..grammar_api import Grammar
from ..grammar.json_schema import load_schema
from ..serialization.disk_cache import DiskCache
from .compiled import CompiledGrammar
from .grammar_source import GrammarSource
from .grammar_lru import GrammarLRU
from .held_bytes import static_bytes
from .lazy_schema import compile_schema_lazily
from .vocab_memo import shared_vocab_tables

# The in-memory cache's default bound (XGrammar's default is -1, unbounded): a server compiling
# client schemas must not grow without limit.  1 GiB holds ~2,000 typical MaskBench schema
# grammars on Llama-3 (~0.5 MB each, measured by bench/bench_memory.py).
DEFAULT_CACHE_LIMIT_BYTES = 1 << 30


# Whether compile_json_schema may compile in two parts (lazy_schema.py); benchmarks and tests
# switch it off to time or check the one-part compile in the same process.
_TWO_PARTS = [True]


def set_two_part_schemas(on: bool) -> bool:
    """Let ``compile_json_schema`` compile in two parts (the default) or not, for compilers'
    later compiles; returns the previous setting.  A benchmark and test knob: masks are the
    same either way.

    Example::

        >>> old = set_two_part_schemas(False); _ = set_two_part_schemas(old)
    """
    old = _TWO_PARTS[0]
    _TWO_PARTS[0] = bool(on)
    return old


class GrammarCompiler:
    """Compiles grammars for one tokenizer; compiled results are cached and shared.

    A compile builds the grammar's automaton and returns at once with an empty token-mask
    cache: the first ``fill_next_token_bitmask`` that meets a parser state classifies the
    vocabulary for it (in C, without the GIL) and every matcher of the grammar reuses the
    result, so the time to the first mask stays small.  ``precompute=True`` (keyword-only)
    is the warm-up mode instead: every compile classifies every state before returning, on up
    to ``max_threads`` C threads, so fills do not pay for classification
    (``CompiledGrammar.precompute`` does the same for one grammar; the one exception: a rule
    called from more than 32 places is classified per (state, return state) pair; pairs no
    token can tell apart share one walk, and a grammar needing more than
    ``mask_cache.MAX_PAIR_WALKS`` walks or ``mask_cache.MAX_PAIRS`` pairs leaves them to the
    fills that meet them).  Masks are identical in both modes.  In either mode a large
    grammar's per-rule automata are built on up to ``max_threads`` threads (the caller and
    helpers, GIL released; the automaton does not depend on the count).

    ``cache_limit_bytes`` bounds the in-memory cache (least recently used grammars are evicted
    first; -1: unbounded, XGrammar's default; xmask's default is ``DEFAULT_CACHE_LIMIT_BYTES`` =
    1 GiB).  The size counts what a compiled grammar really holds (``held_bytes``: automaton
    tables, token-mask cache entries, how to rebuild the grammar and the automaton's
    Python-side data), not just ``memory_size_bytes``.  Token-mask caches grow as fills
    classify states; the bound is enforced at each compile that adds a grammar (a cache of more
    than 16 grammars counts its older grammars again when the known sizes pass the bound or
    every 64 such compiles, so that a compile's cost does not grow with the cache:
    :mod:`.grammar_lru`).

    ``cache_dir`` (keyword-only, default None = off) adds an on-disk cache of compiled grammars
    for warm-up across restarts (:mod:`xmask.serialization.disk_cache`): a compile first looks
    for ``<cache_dir>/<key>.json``, where the key is a SHA-256 of what is compiled, its options,
    the compile limits, the tokenizer's ``vocab_hash`` and the format and xmask versions, and
    writes the result there after compiling.  Writes are atomic (a temporary file in the same
    directory, then ``os.replace``), so concurrent writers, threads or processes, are safe; a
    corrupt, truncated or other-version file is never trusted: it is ignored, the grammar is
    compiled again and the file rewritten.  ``cache_info()`` reports hits and misses.

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> compiler = xmask.GrammarCompiler(info)
        >>> a = compiler.compile_grammar('root ::= "yes" | "no"')
        >>> a is compiler.compile_grammar('root ::= "yes" | "no"')
        True
    """

    def __init__(self, tokenizer_info, max_threads: int = 8, cache_enabled: bool = True,
                 cache_limit_bytes: int = DEFAULT_CACHE_LIMIT_BYTES, *,
                 limits: Optional[CompileLimits] = None,
                 cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                 precompute: bool = False):
        from ..tokenizer.info import TokenizerInfo

        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(
                f"GrammarCompiler needs a TokenizerInfo, got {type(tokenizer_info).__name__}"
            )
        if max_threads < 1:
            raise ValueError(f"max_threads must be >= 1, got {max_threads}")
        if not isinstance(precompute, bool):
            raise TypeError(f"precompute must be a bool, got {type(precompute).__name__}")
        if limits is not None and not isinstance(limits, CompileLimits):
            raise TypeError(f"limits must be an xmask.CompileLimits, got {type(limits).__name__}")
        self._limits = DEFAULT_LIMITS if limits is None else limits
        self._info = tokenizer_info
        self._max_threads = int(max_threads)
        self._cache_enabled = bool(cache_enabled)
        if isinstance(cache_limit_bytes, bool) or not isinstance(cache_limit_bytes, int) or (
                cache_limit_bytes < -1):
            raise ValueError(
                f"cache_limit_bytes must be an int >= 0, or -1 (unbounded), got {cache_limit_bytes!r}")
        self._cache_limit = int(cache_limit_bytes)
        self._vocab_tables = shared_vocab_tables(tokenizer_info)
        self._cache = GrammarLRU(self._cache_limit)
        self._lock = threading.Lock()
        self._memory_hits = 0
        self._disk = None if cache_dir is None else DiskCache(cache_dir, tokenizer_info)
        self._precompute = bool(precompute)

    def __reduce__(self):
        # The configuration travels, the compiled grammars in memory do not: a worker starts
        # with an empty cache (a cache_dir is shared through the file system).
        disk_dir = None if self._disk is None else self._disk.directory
        return _rebuild_compiler, (self._info, self._max_threads, self._cache_enabled,
                                   self._cache_limit, self._limits, disk_dir, self._precompute)

    @property
    def tokenizer_info(self):
        """The ``TokenizerInfo`` every grammar of this compiler is compiled for."""
        return self._info

    @property
    def cache_limit_bytes(self) -> int:
        """The in-memory cache's byte limit (-1: unlimited; default 1 GiB), as passed to the
        constructor.

        Example::

            >>> xmask.GrammarCompiler(info, cache_limit_bytes=1 << 20).cache_limit_bytes  # doctest: +SKIP
            1048576
        """
        return self._cache_limit

    def _compile(self, key, source, two_parts=False) -> CompiledGrammar:
        # source: a GrammarSource (the compiled grammar keeps it, not the IR it builds) or the
        # caller's own Grammar; two_parts: source is compile_json_schema's, which may compile
        # in two parts (lazy_schema.py)
        with deep_recursion(), gc_paused(), responsive_switching(), \
                compile_deadline(self._limits.max_compile_seconds):
            return self._compile_inner(key, source, two_parts)

    def _compile_inner(self, key, source, two_parts=False) -> CompiledGrammar:
        if self._cache_enabled:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._memory_hits += 1
                    return hit
        compiled = disk_key = None
        if self._disk is not None:
            disk_key = self._disk.key(self._disk_description(key))
            compiled = self._disk.load(disk_key)
        if compiled is None:
            rebuild = isinstance(source, GrammarSource)
            # two parts only when nothing needs the whole grammar at once: no warm-up
            # classification, no disk copy, no loosening report (lenient mode warns as it goes)
            if (two_parts and _TWO_PARTS[0] and not self._precompute and self._disk is None
                    and not _schema_options(source.args[1])["lenient"]):
                compiled = compile_schema_lazily(
                    _json_schema_converter(*source.args), self._info, self._vocab_tables,
                    max_threads=self._max_threads, limits=self._limits)
            else:
                compiled = CompiledGrammar._build(
                    source.make(*source.args) if rebuild else source, self._info,
                    self._vocab_tables, max_threads=self._max_threads,
                    precompute=self._precompute, limits=self._limits,
                )
            if disk_key is not None:
                self._disk.store(disk_key, compiled)  # while it still holds the IR
            if rebuild:
                compiled._hold_source(source)
        if self._cache_enabled:
            static = static_bytes(compiled)  # a walk over the grammar's objects: outside the lock
            with self._lock:
                compiled = self._cache.put(key, compiled, static)
        return compiled

    def _disk_description(self, key) -> list:
        """``key`` as JSON-able data for the disk cache's content hash (a Grammar object is
        described by its exact serialized form)."""
        what = [Grammar.of(x).serialize_json() if isinstance(x, ir.Grammar) else x for x in key]
        return [what, dataclasses.asdict(self._limits), self._precompute]

    def cache_info(self) -> dict:
        """Cache counters: ``memory_entries``, ``memory_hits`` and, with a ``cache_dir``,
        ``disk_hits`` (loaded from disk instead of compiling), ``disk_misses``,
        ``disk_writes``, ``disk_rejected`` (bad files ignored and recompiled) and
        ``disk_errors`` (I/O failures), plus ``cache_dir``; ``memory_bytes`` is
        ``get_cache_size_bytes()``.

        Example::

            >>> compiler.cache_info()["memory_entries"]   # doctest: +SKIP
            1
        """
        with self._lock:
            out = {"memory_entries": len(self._cache), "memory_hits": self._memory_hits,
                   "memory_bytes": self._cache.size(), "cache_dir": None}
        if self._disk is not None:
            out["cache_dir"] = self._disk.directory
            out.update({f"disk_{k}": v for k, v in self._disk.stats.items()})
        return out

    def compile_grammar(self, grammar, root_rule_name: str = "root") -> CompiledGrammar:
        """Compile a ``Grammar`` or EBNF text.

        Example::

            >>> compiler.compile_grammar('root ::= [0-9]+').grammar.root   # doctest: +SKIP
            'root'
        """
        if isinstance(grammar, str):
            text = grammar
            return self._compile(("ebnf", text, root_rule_name),
                                 GrammarSource(_parse_ebnf, text, root_rule_name, self._info))
        if isinstance(grammar, ir.Grammar):
            return self._compile(("grammar", grammar), grammar)
        raise TypeError(f"compile_grammar needs a Grammar or EBNF str, got {type(grammar).__name__}")

    def compile_regex(self, pattern: str) -> CompiledGrammar:
        """Compile a regex (full-match semantics; see ``Grammar.from_regex``)."""
        if not isinstance(pattern, str):
            raise TypeError(f"compile_regex needs a str pattern, got {type(pattern).__name__}")
        return self._compile(("regex", pattern), GrammarSource(Grammar.from_regex, pattern))

    def compile_lark(self, lark_string: str, *, named_grammars=None) -> CompiledGrammar:
        """Compile a Lark grammar (see ``Grammar.from_lark``); the compiler's tokenizer resolves
        named special tokens (``<|python_tag|>``).  Cached by the text and the named grammars.

        Example::

            >>> compiler.compile_lark('start: "yes" | "no"').grammar.root   # doctest: +SKIP
            'root'
        """
        if not isinstance(lark_string, str):
            raise TypeError(f"compile_lark needs a Lark str, got {type(lark_string).__name__}")
        if named_grammars is not None and not isinstance(named_grammars, dict):
            raise TypeError("named_grammars must be a dict of name -> Grammar or Lark str")
        named = dict(named_grammars or {})
        # flat key: the disk cache describes top-level Grammar items by their serialized form
        flat = tuple(x for item in named.items() for x in item)
        return self._compile(
            ("lark", lark_string) + flat,
            GrammarSource(_from_lark, lark_string, self._info, named),
        )

    def compile_json_schema(self, schema, *, any_whitespace=True, indent=None, separators=None,
                            strict_mode=True, max_whitespace_cnt=None, lenient=False,
                            any_order=False) -> CompiledGrammar:
        """Compile a JSON schema (str, dict or pydantic model; see ``Grammar.from_json_schema``).
        Results are cached by the canonical schema text plus the options.

        Unless the compiler precomputes, has a ``cache_dir`` or ``lenient=True``, the schema is
        compiled in two parts (:mod:`xmask.compiler.lazy_schema`): what the first mask needs
        now, the rest in a background thread after the first fill; masks are the same, and a
        compile limit only the rest crosses is raised by the first matcher call that needs it.

        Example::

            >>> cg = compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}})  # doctest: +SKIP
            >>> xmask.GrammarMatcher(cg).accept_string("[1, 2]")                                  # doctest: +SKIP
            True
        """
        import json

        # Canonical text for the cache key.  Keys keep their order: the order of ``properties``
        # is the member order of the grammar, so sorting keys would change the language.
        # deeply nested schemas (1,000 levels) are valid input; parsing a large schema is
        # Python work, so other threads get the GIL back quickly here too
        # (the compile inside shares these settings: entering them again only counts)
        with deep_recursion(), responsive_switching():
            canonical = json.dumps(load_schema(schema))
            opts = (any_whitespace, indent, tuple(separators) if separators else None,
                    strict_mode, max_whitespace_cnt, lenient, any_order)
            return self._compile(
                ("json_schema", canonical, opts),
                GrammarSource(_from_json_schema, canonical, opts, self._limits),
                two_parts=True,
            )

    def compile_structural_tag(self, *args, **kwargs) -> CompiledGrammar:
        """Compile a structural tag: ``compile_structural_tag(structural_tag)`` (a
        ``StructuralTag``, its JSON text or a dict) or the deprecated
        ``compile_structural_tag(tags, triggers)``; see ``Grammar.from_structural_tag``.  Token
        strings are resolved against this compiler's tokenizer.  Cached by the structural tag's
        canonical JSON.

        Example::

            >>> cg = compiler.compile_structural_tag({"format": {"type": "const_string",
            ...                                                  "value": "hi"}})  # doctest: +SKIP
        """
        from ..structural.lower import structural_tag_to_grammar
        from ..structural.spec import canonical_json, structural_tag_argument

        with deep_recursion(), responsive_switching():
            canonical = canonical_json(structural_tag_argument(args, kwargs))
            return self._compile(("structural_tag", canonical),
                                 GrammarSource(structural_tag_to_grammar, canonical, self._info))

    def compile_builtin_json_grammar(self) -> CompiledGrammar:
        """Compile the built-in JSON grammar (any JSON value)."""
        return self._compile(("builtin_json",), GrammarSource(Grammar.builtin_json_grammar))

    def get_cache_size_bytes(self) -> int:
        """Bytes held by the cached compiled grammars (``held_bytes`` of each: more than their
        ``memory_size_bytes``, which counts only the tables the runtime reads).

        Example::

            >>> compiler.get_cache_size_bytes() >= 0   # doctest: +SKIP
            True
        """
        with self._lock:
            return self._cache.size()

    def clear_cache(self) -> None:
        """Drop every cached compiled grammar."""
        with self._lock:
            self._cache.clear()


# The front ends a GrammarSource re-runs: module functions of immutable arguments, so a compiled
# grammar never references its compiler (the compiler's cache references the compiled grammar).

def _parse_ebnf(text: str, root_rule_name: str, info) -> Grammar:
    # TagDispatch triggers that are special tokens' texts may be fired by those tokens
    from ..grammar.ebnf import parse_ebnf
    from .special_literals import special_texts

    texts = set()
    for t in special_texts(info).by_text:
        try:
            texts.add(t.decode("utf-8"))
        except UnicodeDecodeError:
            pass  # not a text a trigger can spell
    return Grammar.of(parse_ebnf(text, root_rule_name=root_rule_name,
                                 special_texts=frozenset(texts)))


def _from_lark(lark_string: str, info, named: dict) -> Grammar:
    return Grammar.from_lark(lark_string, tokenizer_info=info, named_grammars=named)


def _schema_options(opts: tuple) -> dict:
    # compile_json_schema's option tuple (its cache key) as the front end's keyword arguments
    names = ("any_whitespace", "indent", "separators", "strict_mode", "max_whitespace_cnt",
             "lenient", "any_order")
    return dict(zip(names, opts))


def _from_json_schema(canonical: str, opts: tuple, limits) -> Grammar:
    return Grammar.from_json_schema(canonical, limits=limits, **_schema_options(opts))


def _json_schema_converter(canonical: str, opts: tuple, limits):
    # the converter _from_json_schema runs, for a lazy compile (lazy_schema.py)
    from ..grammar.json_schema.api import json_schema_converter

    return json_schema_converter(canonical, limits=limits, **_schema_options(opts))


def _rebuild_compiler(info, max_threads, cache_enabled, cache_limit_bytes, limits, cache_dir,
                      precompute=False):
    return GrammarCompiler(info, max_threads, cache_enabled, cache_limit_bytes, limits=limits,
                           cache_dir=cache_dir, precompute=precompute)
