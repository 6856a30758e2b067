"""Pause Python's cyclic garbage collector during compilation.

Compiling a large schema creates millions of small lists and tuples that live until the
compile ends; each allocation burst triggers full collections that re-scan all of them
(measured: ~2/3 of the automaton build time on the largest MaskBench schemas).  Compile data
holds no reference cycles that need collecting mid-compile, so the collector is paused and
restored afterwards.  Nested and concurrent compiles share one pause (counted), and a
collector the application disabled itself stays disabled.
"""

from __future__ import annotations

import gc

from ._process_setting import counted_setting


def _set_enabled(on: bool) -> None:
    if on:
        gc.enable()
    else:
        gc.disable()


# ``with gc_paused(): ...`` runs the block with cyclic GC off (reference counting stays)
gc_paused = counted_setting(gc.isenabled, _set_enabled, lambda on: False if on else None)
