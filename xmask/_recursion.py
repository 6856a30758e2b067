"""Deeply nested grammars: raise Python's recursion limit for front-end / compile work, and
turn a RecursionError into a clear GrammarLimitError instead of a crash."""

from __future__ import annotations

import contextlib
import sys
import threading

from .errors import GrammarLimitError

_LIMIT = 30_000
_lock = threading.Lock()


@contextlib.contextmanager
def deep_recursion(what: str = "grammar"):
    """Run a block with a recursion limit high enough for ~2,000 levels of nesting."""
    with _lock:
        old = sys.getrecursionlimit()
        if old < _LIMIT:
            sys.setrecursionlimit(_LIMIT)
    try:
        yield
    except RecursionError:
        raise GrammarLimitError(f"{what} is nested too deeply to compile") from None
    finally:
        with _lock:
            if sys.getrecursionlimit() == _LIMIT and old < _LIMIT:
                sys.setrecursionlimit(old)
