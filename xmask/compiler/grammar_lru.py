"""The compiler's in-memory cache: compiled grammars by key, least recently used evicted first
when the bytes they hold pass a limit.

A compiled grammar's size (``held_bytes``) grows after it is cached: fills classify states of
its lazy token-mask cache.  Counting every cached grammar again at every insert costs about a
microsecond each (a server with 1,000 cached schemas would pay a millisecond per compile, more
than a typical compile).  Sizes only grow, so the sum of the sizes last counted is a lower
bound of the true total: an insert counts the new grammar only, and the whole cache is counted
again when that bound passes the limit (then the least recently used grammars are evicted
until the exact total fits), at least every ``RECOUNT_EVERY`` inserts, at every insert while
the cache holds at most ``EXACT_UP_TO`` grammars, and whenever the size is asked for.  So a
large cache may pass its limit by what fills classified since its last count, for at most
``RECOUNT_EVERY`` compiles.  Not thread-safe: the compiler calls it under its lock.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> g = xmask.GrammarCompiler(info, cache_enabled=False).compile_grammar('root ::= "a"')
    >>> lru = GrammarLRU(limit=-1)
    >>> lru.put("k", g) is g, lru.get("k") is g, len(lru)
    (True, True, 1)
"""

from __future__ import annotations

from collections import OrderedDict

from .held_bytes import held_bytes, static_bytes

EXACT_UP_TO = 16
RECOUNT_EVERY = 64


class GrammarLRU:
    """Compiled grammars by key; ``limit`` bytes (-1: unbounded)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._grammars: "OrderedDict[object, object]" = OrderedDict()
        self._static: dict = {}  # key -> static_bytes of the grammar (never changes)
        self._sizes: dict = {}  # key -> held_bytes when last counted
        self._known = 0  # sum of self._sizes: a lower bound of the total held now
        self._inserts = 0  # since the last full count

    def __len__(self) -> int:
        return len(self._grammars)

    def values(self) -> list:
        """The cached grammars, least recently used first."""
        return list(self._grammars.values())

    def get(self, key):
        """The cached grammar (now the most recently used), or None."""
        hit = self._grammars.get(key)
        if hit is not None:
            self._grammars.move_to_end(key)
        return hit

    def put(self, key, compiled, static=None):
        """Cache ``compiled`` under ``key`` unless a grammar is cached there already (a
        concurrent compile won); return the cached one.  ``static``: its ``static_bytes``
        when the caller computed it (outside the compiler's lock)."""
        if key not in self._grammars:
            self._grammars[key] = compiled
            self._static[key] = static_bytes(compiled) if static is None else static
            size = self._sizes[key] = held_bytes(compiled, self._static[key])
            self._known += size
            self._inserts += 1
        self._grammars.move_to_end(key)
        kept = self._grammars[key]
        self._evict()
        return kept

    def size(self) -> int:
        """Bytes the cached grammars hold now (counted exactly)."""
        self._recount()
        return self._known

    def clear(self) -> None:
        self._grammars.clear()
        self._static.clear()
        self._sizes.clear()
        self._known = 0
        self._inserts = 0

    def _recount(self) -> None:
        total = 0
        for key, compiled in self._grammars.items():
            size = self._sizes[key] = held_bytes(compiled, self._static[key])
            total += size
        self._known = total
        self._inserts = 0

    def _evict(self) -> None:
        if self.limit < 0:
            return
        if (len(self._grammars) <= EXACT_UP_TO or self._known > self.limit
                or self._inserts >= RECOUNT_EVERY):
            self._recount()
        while self._grammars and self._known > self.limit:
            key, _ = self._grammars.popitem(last=False)
            self._static.pop(key)
            self._known -= self._sizes.pop(key)
