"""Warnings that point at the user's line, however deep in xmask they are raised.

``warnings.warn(..., stacklevel=n)`` counts Python frames from the caller, so a fixed ``n`` is
right for one call path only (``Grammar.from_lark`` and ``GrammarCompiler.compile_lark`` reach
the Lark parser at different depths), and modules compiled by Cython (the JSON-schema front
end, ``setup.py`` ``PY_MODULES``) have no frames to count.  :func:`warn_from_caller` walks the
frames instead, to the first one outside the package, and files the warning there with
``warnings.warn_explicit``, as ``warn`` would have.  :func:`quiet_warnings` silences it in the
current thread only (a background rebuild of a conversion that already warned the user;
``warnings.catch_warnings`` would change the filters of every thread).

Example::

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_from_caller("look here")
    >>> str(w[0].message)
    'look here'
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings

__all__ = ["quiet_warnings", "warn_from_caller"]

_QUIET = threading.local()

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_from_caller(message: str, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside the xmask
    package, so the warning points at the user's line (see the module docstring).

    Example::

        >>> warn_from_caller("ignored", DeprecationWarning)  # filtered out by default
    """
    if getattr(_QUIET, "on", False):
        return
    frame = sys._getframe(0)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:  # called from xmask itself only (no user frame)
        warnings.warn(message, category, stacklevel=2)
        return
    g = frame.f_globals
    # no module_globals, as warnings.warn passes none: with them warn_explicit asks the
    # module's loader for its source, and the loader of a ``python -c`` or stdin script
    # (BuiltinImporter) raises ImportError instead (the line is read from the file when shown)
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=g.get("__name__", "<string>"),
                           registry=g.setdefault("__warningregistry__", {}))


@contextlib.contextmanager
def quiet_warnings():
    """No :func:`warn_from_caller` warning in this thread while the block runs (other threads
    warn as usual).

    Example::

        >>> with quiet_warnings():
        ...     warn_from_caller("never shown")
    """
    was = getattr(_QUIET, "on", False)
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = was
