"""Integrations with other libraries (each imports its library only when first used).

``xmask.contrib.hf``: a ``transformers`` ``LogitsProcessor`` for ``model.generate``.

Example::

    >>> import xmask
    >>> xmask.contrib.hf.LogitsProcessor  # doctest: +SKIP
"""


def __getattr__(name):
    # Like XGrammar, `xgr.contrib.hf` works right after `import xmask as xgr`, but transformers
    # and torch are imported only here, on first access.
    if name == "hf":
        import importlib

        return importlib.import_module(".hf", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["hf"]
