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

import sys

from ._process_setting import counted_setting

COMPILE_SWITCH_INTERVAL = 0.0005  # seconds

# ``with responsive_switching(): ...`` runs the block with a short GIL switch interval
responsive_switching = counted_setting(
    sys.getswitchinterval, sys.setswitchinterval,
    lambda now: COMPILE_SWITCH_INTERVAL if now > COMPILE_SWITCH_INTERVAL else None)
