"""Keep other Python threads responsive while a compile runs Python code.

The parts of a compile written in Python (schema conversion, parts of the automaton build) hold
the GIL; a thread that wants it (a server's scheduler loop) waits for the switch interval (5 ms
by default) before the holder is asked to let go, so every such slice stalls it by ~5 ms.
During a compile the interval is lowered to ``COMPILE_SWITCH_INTERVAL`` (0.5 ms): it only
matters while another thread is waiting for the GIL, so a compile alone pays nothing, and a
waiting thread gets the GIL within about half a millisecond.  Like ``gc_paused``, nested and
concurrent compiles share one change (counted), and the interval is restored afterwards unless
the application changed it meanwhile.

Example::

    >>> import sys
    >>> before = sys.getswitchinterval()
    >>> with responsive_switching():
    ...     sys.getswitchinterval() <= COMPILE_SWITCH_INTERVAL
    True
    >>> sys.getswitchinterval() == before
    True
"""

from __future__ import annotations

import contextlib
import sys
import threading

COMPILE_SWITCH_INTERVAL = 0.0005  # seconds

_lock = threading.Lock()
_depth = 0
_saved = 0.0
_ours = None  # the value we set (as Python reports it back), None if we left it alone


@contextlib.contextmanager
def responsive_switching():
    """``with responsive_switching(): ...`` runs the block with a short GIL switch interval."""
    global _depth, _saved, _ours
    with _lock:
        if _depth == 0:
            _saved = sys.getswitchinterval()
            _ours = None
            if _saved > COMPILE_SWITCH_INTERVAL:
                sys.setswitchinterval(COMPILE_SWITCH_INTERVAL)
                _ours = sys.getswitchinterval()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            # restore unless the application set its own value meanwhile
            if _depth == 0 and _ours is not None and sys.getswitchinterval() == _ours:
                sys.setswitchinterval(_saved)
