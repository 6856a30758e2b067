"""Deeply nested grammars: raise Python's recursion limit for front-end / compile work, and
turn a RecursionError into a clear GrammarLimitError instead of a crash."""

from __future__ import annotations

import contextlib
import sys

from ._process_setting import counted_setting
from .errors import GrammarLimitError

_LIMIT = 30_000
# nested and concurrent compiles share one raise of the limit (counted), so one compile ending
# never lowers it under another that is still running
_raised_limit = counted_setting(sys.getrecursionlimit, sys.setrecursionlimit,
                                lambda now: _LIMIT if now < _LIMIT else None)


@contextlib.contextmanager
def deep_recursion(what: str = "grammar"):
    """Run a block with a recursion limit high enough for ~2,000 levels of nesting."""
    with _raised_limit():
        try:
            yield
        except RecursionError:
            raise GrammarLimitError(f"{what} is nested too deeply to compile") from None
