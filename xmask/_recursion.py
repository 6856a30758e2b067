"""Deeply nested grammars: raise Python's recursion limit for front-end / compile work, and
turn a RecursionError into a clear GrammarLimitError instead of a crash."""

from __future__ import annotations

import sys

from ._process_setting import counted_setting
from .errors import GrammarLimitError

_LIMIT = 30_000
# nested and concurrent compiles share one raise of the limit (counted), so one compile ending
# never lowers it under another that is still running
_raised_limit = counted_setting(sys.getrecursionlimit, sys.setrecursionlimit,
                                lambda now: _LIMIT if now < _LIMIT else None)


class deep_recursion:
    """Run a block with a recursion limit high enough for ~2,000 levels of nesting (a class,
    not a generator: every compile enters it, and this costs a quarter as much).

    Example::

        >>> with deep_recursion("schema"):
        ...     sys.getrecursionlimit() >= _LIMIT
        True
    """

    __slots__ = ("what",)

    def __init__(self, what: str = "grammar"):
        self.what = what

    def __enter__(self) -> None:
        _raised_limit.__enter__()

    def __exit__(self, kind, value, tb) -> bool:
        _raised_limit.__exit__(kind, value, tb)
        if kind is not None and issubclass(kind, RecursionError):
            raise GrammarLimitError(f"{self.what} is nested too deeply to compile") from None
        return False
