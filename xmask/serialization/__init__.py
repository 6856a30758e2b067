"""Serialization of xmask objects: a versioned, checksummed JSON format, and an on-disk cache.

* :mod:`.format`: the envelope (``__VERSION__``, kind, checksum) and its errors;
* :mod:`.fields`: typed field access and NumPy arrays as base64;
* :mod:`.grammar_codec`: Grammar IR as a table of shared nodes;
* :mod:`.compiled_codec`: a compiled grammar's tables, validated on load;
* :mod:`.disk_cache`: compiled grammars on disk, keyed by content hash.

The objects' own ``serialize_json`` / ``deserialize_json`` methods are the public entry points.

Example::

    >>> import xmask
    >>> xmask.get_serialization_version()
    'xmask-v3'
"""

from .format import (
    SERIALIZATION_VERSION,
    CorruptJSONError,
    TokenizerMismatchError,
    get_serialization_version,
)

__all__ = [
    "SERIALIZATION_VERSION",
    "CorruptJSONError",
    "TokenizerMismatchError",
    "get_serialization_version",
]
