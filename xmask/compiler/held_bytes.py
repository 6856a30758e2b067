"""What a compiled grammar really holds in memory, for the compile cache's size accounting.

``CompiledGrammar.memory_size_bytes`` counts the automaton tables and the token-mask cache (the
parts the runtime reads); how to rebuild its grammar (or the caller's grammar), the
automaton's Python-side data (context lists, first-byte sets, ...) and the per-object
overheads are held too.  ``static_bytes`` walks a compiled grammar's
objects once (deduplicating shared objects and NumPy buffers, skipping what every grammar of a
tokenizer shares) and ``held_bytes`` adds the token-mask cache, which grows as fills classify
states.  C allocations are counted by their size plus the allocator's per-block overhead.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "a"+')
    >>> held_bytes(cg) >= cg.memory_size_bytes
    True
"""

from __future__ import annotations

import sys

# glibc / jemalloc: a malloc'd block carries ~16 bytes of header and rounding.
_MALLOC_OVERHEAD = 16
_LEAVES = (str, bytes, int, float, complex)
_LEAF_TYPES = frozenset(_LEAVES + (bool,))


def static_bytes(compiled) -> int:
    """Bytes of everything ``compiled`` holds except the token-mask cache's entries and the
    tokenizer's shared tables (counted once per compiler, not per grammar).  Computed by a walk
    over its objects: call once per grammar (a few ms for a large schema)."""
    shared = {id(compiled.tokenizer_info), id(compiled._vocab_tables), id(compiled._mask_cache)}
    return _deep_size(compiled, shared) + _deep_size(compiled._mask_cache.arrays, shared)


def held_bytes(compiled, static=None) -> int:
    """``static_bytes`` (or the given value) plus the token-mask cache's current bytes and its
    per-entry allocation overhead."""
    if static is None:
        static = static_bytes(compiled)
    cache = compiled._mask_cache
    parts = cache.memory_parts()
    _, entries, _ = cache.summary()
    dynamic = parts["entry_payloads"] + parts["entry_headers"] + parts["state_index"]
    dynamic += parts["dedup_table"] + 2 * _MALLOC_OVERHEAD * int(entries)
    dynamic += parts.get("pair_entries", 0)  # (entries of (state, return state) pairs)
    return int(static + dynamic)


_DICT_BYTES: dict = {}


def _dict_bytes(n: int) -> int:
    got = _DICT_BYTES.get(n)
    if got is None:
        got = _DICT_BYTES[n] = sys.getsizeof(dict.fromkeys(range(n)))
    return got


def _deep_size(root, skip_ids) -> int:
    # Iterative walk (grammars nest deeply): containers, instance dicts and slots, NumPy arrays
    # by their buffer (views count their base once).
    import numpy as np

    seen = set(skip_ids)
    total = 0
    todo = [root]
    ndarray, getsizeof = np.ndarray, sys.getsizeof
    while todo:
        obj = todo.pop()
        t = type(obj)
        # the common exact types first, each as the general chain below would count it
        if t in _LEAF_TYPES:
            total += getsizeof(obj)
            continue
        if t is ndarray or t is tuple or t is list:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if t is ndarray:
                total += getsizeof(obj) if obj.base is None else obj.__sizeof__()
                if obj.base is not None:
                    todo.append(obj.base)
                elif obj.dtype.kind == "O":  # (``dtype == object`` builds a dtype per test)
                    todo.extend(obj.ravel().tolist())
            else:
                total += getsizeof(obj)
                todo.extend(obj)
            continue
        if obj is None or isinstance(obj, type):
            continue
        if isinstance(obj, _LEAVES):
            # counted per reference: whether equal strings / numbers are one object depends on
            # interning and caches, and the count must not (a cache limit is exact)
            total += sys.getsizeof(obj)
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            total += sys.getsizeof(obj) if obj.base is None else obj.__sizeof__()
            if obj.base is not None:
                todo.append(obj.base)
            elif obj.dtype.kind == "O":  # (``dtype == object`` builds a dtype per test)
                todo.extend(obj.ravel().tolist())
            continue
        if isinstance(obj, dict):
            # an instance dict's size depends on whether it still shares its class's keys,
            # which depends on the process's history: count every dict as a fresh one
            total += _dict_bytes(len(obj))
            todo.extend(obj.keys())
            todo.extend(obj.values())
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, (bytearray, memoryview)):
            continue
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
            continue
        d = getattr(obj, "__dict__", None)
        if d is not None:
            todo.append(d)
        for cls in type(obj).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name not in ("__dict__", "__weakref__"):
                    todo.append(getattr(obj, name, None))
        arrays = getattr(obj, "arrays", None)  # Cython tables keep their arrays here
        if isinstance(arrays, dict):
            todo.append(arrays)
    return total
