"""Pause Python's cyclic garbage collector during compilation.

Compiling a large schema creates millions of small lists and tuples that live until the
compile ends; each allocation burst triggers full collections that re-scan all of them
(measured: ~2/3 of the automaton build time on the largest MaskBench schemas).  Compile data
holds no reference cycles that need collecting mid-compile, so the collector is paused and
restored afterwards.  Nested and concurrent compiles share one pause (counted), and a
collector the application disabled itself stays disabled.

When the pause ends, the objects the compile keeps (few since compiled grammars stopped
holding their IR tree, :mod:`xmask.compiler.grammar_source`; the process-wide memos the front
end fills on a large schema are still thousands) are still in the youngest
generation, so the next allocation in any thread would trigger a collection that scans them
all, holding the GIL for up to ~10 ms (issue 10: a compile in a background thread must not
stall the server's other threads).  They are moved to the oldest generation instead, unscanned
(``gc.freeze()`` then ``gc.unfreeze()``: two list splices).  Nothing is lost: the oldest
generation is still collected, by the next full collection; the only effect on the
application's own young objects is the same promotion (their cycles, if any, are found by that
full collection rather than a young one: at most the young generations' content at that
moment).  A compile leaves no cyclic garbage of its own
(tests/compiler/test_compile_leaves_no_cycles.py).  An application that froze objects itself
(``gc.get_freeze_count() > 0``, e.g. a pre-fork server) is left alone from then on:
unfreezing would undo its freeze (and the count walks the frozen objects, so it is asked only
until it is seen non-zero).

Example::

    >>> import gc
    >>> with gc_paused():
    ...     gc.isenabled()
    False
"""

from __future__ import annotations

import gc

from ._process_setting import counted_setting


_app_froze = False  # the application uses gc.freeze(): never promote (see above)


def _set_enabled(on: bool) -> None:
    global _app_froze
    if on:
        if not _app_froze:
            if gc.get_freeze_count():
                _app_froze = True
            else:
                gc.freeze()  # every tracked object to the permanent generation (no scan) ...
                gc.unfreeze()  # ... and back, into the oldest generation
        gc.enable()
    else:
        gc.disable()


# ``with gc_paused(): ...`` runs the block with cyclic GC off (reference counting stays)
gc_paused = counted_setting(gc.isenabled, _set_enabled, lambda on: False if on else None)
