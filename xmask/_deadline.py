"""Compile deadline (``CompileLimits.max_compile_seconds``).

The compiler's long-running Python loops (schema conversion, NFA construction,
determinization, DFA exploration, mask-cache chunks) call :func:`check` now and then; past the
deadline it raises ``GrammarLimitError``, so a server can bound the time one schema may take.
The deadline lives in a context variable set by ``GrammarCompiler`` for one compile; worker
threads get it passed explicitly (see ``mask_cache``).
"""

from __future__ import annotations

import contextvars
import time
from typing import Optional, Tuple

from .errors import GrammarLimitError

Deadline = Optional[Tuple[float, float]]  # (monotonic end, the configured seconds)

_current: "contextvars.ContextVar[Deadline]" = contextvars.ContextVar("xmask_compile_deadline",
                                                                      default=None)


class compile_deadline:
    """Run the block under a deadline of ``seconds`` (None: no deadline).  A class, not a
    generator: every compile enters one.

    Example::

        >>> with compile_deadline(5.0):
        ...     current()[1]
        5.0
    """

    __slots__ = ("seconds", "token")

    def __init__(self, seconds: Optional[float]):
        self.seconds = seconds
        self.token = None

    def __enter__(self) -> None:
        if self.seconds is not None:
            self.token = _current.set((time.monotonic() + self.seconds, self.seconds))

    def __exit__(self, *exc) -> bool:
        if self.token is not None:
            _current.reset(self.token)
            self.token = None
        return False


def current() -> Deadline:
    """The deadline in force here (pass it to worker threads)."""
    return _current.get()


def check(deadline: Deadline = None) -> None:
    """Raise ``GrammarLimitError`` if ``deadline`` (default: the current one) has passed."""
    d = deadline if deadline is not None else _current.get()
    if d is not None and time.monotonic() > d[0]:
        raise GrammarLimitError(
            f"compile took longer than {d[1]:g} s (CompileLimits.max_compile_seconds)")
