"""Compile deadline (``CompileLimits.max_compile_seconds``).

The compiler's long-running Python loops (schema conversion, NFA construction,
determinization, DFA exploration, mask-cache chunks) call :func:`check` now and then; past the
deadline it raises ``GrammarLimitError``, so a server can bound the time one schema may take.
The deadline lives in a context variable set by ``GrammarCompiler`` for one compile; worker
threads get it passed explicitly (see ``mask_cache``).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Optional, Tuple

from .errors import GrammarLimitError

Deadline = Optional[Tuple[float, float]]  # (monotonic end, the configured seconds)

_current: "contextvars.ContextVar[Deadline]" = contextvars.ContextVar("xmask_compile_deadline",
                                                                      default=None)


@contextlib.contextmanager
def compile_deadline(seconds: Optional[float]):
    """Run the block under a deadline of ``seconds`` (None: no deadline)."""
    if seconds is None:
        yield
        return
    token = _current.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Deadline:
    """The deadline in force here (pass it to worker threads)."""
    return _current.get()


def check(deadline: Deadline = None) -> None:
    """Raise ``GrammarLimitError`` if ``deadline`` (default: the current one) has passed."""
    d = deadline if deadline is not None else _current.get()
    if d is not None and time.monotonic() > d[0]:
        raise GrammarLimitError(
            f"compile took longer than {d[1]:g} s (CompileLimits.max_compile_seconds)")
