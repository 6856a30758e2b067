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

import contextlib
import threading
from typing import Any, Callable, Optional


def counted_setting(read: Callable[[], Any], write: Callable[[Any], None],
                    choose: Callable[[Any], Optional[Any]]):
    """A context-manager factory: on first entry ``write(choose(read()))`` unless ``choose``
    returns None (the current value is fine); on last exit the saved value is written back
    if the setting still reads as what was written."""
    lock = threading.Lock()
    state = {"depth": 0, "saved": None, "ours": None}

    @contextlib.contextmanager
    def hold():
        with lock:
            if state["depth"] == 0:
                saved = read()
                wanted = choose(saved)
                state["saved"], state["ours"] = saved, None
                if wanted is not None:
                    write(wanted)
                    state["ours"] = read()  # as the interpreter reports it back
            state["depth"] += 1
        try:
            yield
        finally:
            with lock:
                state["depth"] -= 1
                if state["depth"] == 0 and state["ours"] is not None and read() == state["ours"]:
                    write(state["saved"])

    return hold
