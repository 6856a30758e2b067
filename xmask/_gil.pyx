# cython: language_level=3, boundscheck=False, wraparound=False
"""Let go of the GIL for an instant, without a system call.

Releasing the GIL signals a thread that waits for it: that thread wakes, finds the GIL taken
again, and starts a new wait, which reads the current switch interval.  So after lowering the
interval, one release makes an already waiting thread use the new value instead of the one it
read when it began (``time.sleep(0)`` would do the same, but it enters the kernel, which may
run another process first: milliseconds on a loaded machine).

Not a way to hand the GIL over: the releasing thread takes it back before the woken one runs;
compiled loops call ``_switch_interval.switch_point`` for that.

Example::

    >>> release_once()
"""


def release_once():
    """Release the GIL and take it back at once (wakes threads waiting for it)."""
    with nogil:
        pass
