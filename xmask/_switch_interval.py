"""Keep other Python threads responsive while a compile runs Python code.

The parts of a compile written in Python (schema conversion, parts of the automaton build) hold
the GIL; a thread that wants it (a server's scheduler loop) waits for the switch interval (5 ms
by default) before the holder is asked to let go, so every such slice stalls it by ~5 ms.
During a compile the interval is lowered to ``COMPILE_SWITCH_INTERVAL`` (0.5 ms): it only
matters while another thread is waiting for the GIL, so a compile alone pays nothing, and a
waiting thread gets the GIL within about half a millisecond.  Like ``gc_paused``, nested and
concurrent compiles share one change (counted), and the interval is restored afterwards unless
the application changed it meanwhile.

Compiled code (Cython holding the GIL) never reaches the interpreter's switch check, and a
``with nogil: pass`` there does not help: it wakes the waiting thread, takes the GIL back before
that thread runs, and so restarts its wait (the waiter only asks the holder to let go after a
whole interval without a switch).  Such loops call :func:`switch_point` instead, a Python
function whose entry is a switch check.

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

import sys

from ._gil import release_once
from ._process_setting import counted_setting

COMPILE_SWITCH_INTERVAL = 0.0005  # seconds



def _set_interval(seconds: float) -> None:
    sys.setswitchinterval(seconds)
    # A thread already waiting for the GIL waits out the interval it read when it began (5 ms
    # by default); letting go once wakes it, and it waits again with the new interval.
    release_once()


# ``with responsive_switching(): ...`` runs the block with a short GIL switch interval
responsive_switching = counted_setting(
    sys.getswitchinterval, _set_interval,
    lambda now: COMPILE_SWITCH_INTERVAL if now > COMPILE_SWITCH_INTERVAL else None)


def switch_point() -> None:
    """Hand the GIL over here if another thread asked for it (call it from compiled loops).

    Entering a Python function runs the interpreter's check for a pending GIL request, which
    compiled code never reaches on its own.  Costs a function call when nobody waits.

    Example::

        >>> switch_point()
    """
