"""Pause Python's cyclic garbage collector during compilation.

Compiling a large schema creates millions of small lists and tuples that live until the
compile ends; each allocation burst triggers full collections that re-scan all of them
(measured: ~2/3 of the automaton build time on the largest MaskBench schemas).  Compile data
holds no reference cycles that need collecting mid-compile, so the collector is paused and
restored afterwards.  Nested and concurrent compiles share one pause (counted), and a
collector the application disabled itself stays disabled.
"""

from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused():
    """``with gc_paused(): ...`` runs the block with cyclic GC off (reference counting stays)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
