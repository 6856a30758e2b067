"""A process-wide interpreter setting changed while any compile runs, restored by the last.

Compiles change a few global interpreter settings for their duration (the garbage collector,
the GIL switch interval, the recursion limit).  Nested and concurrent compiles share one
change: the first to enter applies it, the last to leave restores the previous value, unless
the application set its own value meanwhile (then that one is kept).

Example::

    >>> import sys
    >>> deeper = counted_setting(sys.getrecursionlimit, sys.setrecursionlimit,
    ...                          lambda now: 50_000 if now < 50_000 else None)
    >>> before = sys.getrecursionlimit()
    >>> with deeper():
    ...     sys.getrecursionlimit()
    50000
    >>> sys.getrecursionlimit() == before
    True
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional


def counted_setting(read: Callable[[], Any], write: Callable[[Any], None],
                    choose: Callable[[Any], Optional[Any]]):
    """A context-manager factory: on first entry ``write(choose(read()))`` unless ``choose``
    returns None (the current value is fine); on last exit the saved value is written back
    if the setting still reads as what was written."""
    return _Counted(read, write, choose)


class _Counted:
    # One object per setting, shared by every use: calling it returns itself, so a ``with``
    # costs two method calls, not a generator (a compile enters several of these: with
    # contextlib's generator form that was ~10 us of every compile's fixed cost).

    __slots__ = ("read", "write", "choose", "lock", "depth", "saved", "ours")

    def __init__(self, read, write, choose):
        self.read, self.write, self.choose = read, write, choose
        self.lock = threading.Lock()
        self.depth = 0
        self.saved = self.ours = None

    def __call__(self) -> "_Counted":
        return self

    def __enter__(self) -> None:
        with self.lock:
            if self.depth == 0:
                saved = self.read()
                wanted = self.choose(saved)
                self.saved, self.ours = saved, None
                if wanted is not None:
                    self.write(wanted)
                    self.ours = self.read()  # as the interpreter reports it back
            self.depth += 1

    def __exit__(self, *exc) -> bool:
        with self.lock:
            self.depth -= 1
            if self.depth == 0 and self.ours is not None and self.read() == self.ours:
                self.write(self.saved)
        return False
