"""Typed access to the fields of a decoded JSON body, with errors that name the field.

Every getter takes the *path* of the containing object (``"CompiledGrammar.automaton"``) so a
malformed document is reported as ``cannot deserialize CompiledGrammar.automaton.n_states:
expected an int, got str``.

Example::

    >>> get_int({"n": 3}, "n", "Thing", minimum=0)
    3
    >>> get_int({"n": "3"}, "n", "Thing")
    Traceback (most recent call last):
        ...
    xmask.errors.DeserializeFormatError: cannot deserialize Thing.n: expected an int, got str
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, List, Optional

import numpy as np

from .format import format_error

__all__ = [
    "decode_array",
    "encode_array",
    "get_array",
    "get_bool",
    "get_field",
    "get_int",
    "get_int_list",
    "get_list",
    "get_str",
]


def get_field(obj: Any, key: str, where: str) -> Any:
    """``obj[key]``; ``DeserializeFormatError`` if ``obj`` is not an object or lacks ``key``."""
    if not isinstance(obj, dict):
        raise format_error(where, f"expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        raise format_error(f"{where}.{key}", "missing field")
    return obj[key]


def get_int(obj: Any, key: str, where: str, minimum: Optional[int] = None,
            maximum: Optional[int] = None) -> int:
    v = get_field(obj, key, where)
    if isinstance(v, bool) or not isinstance(v, int):
        raise format_error(f"{where}.{key}", f"expected an int, got {type(v).__name__}")
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise format_error(f"{where}.{key}", f"{v} is outside [{minimum}, {maximum}]")
    return v


def _get_typed(obj: Any, key: str, where: str, kind: type, label: str) -> Any:
    v = get_field(obj, key, where)
    if not isinstance(v, kind):
        raise format_error(f"{where}.{key}", f"expected {label}, got {type(v).__name__}")
    return v


def get_bool(obj: Any, key: str, where: str) -> bool:
    return _get_typed(obj, key, where, bool, "true/false")


def get_str(obj: Any, key: str, where: str) -> str:
    return _get_typed(obj, key, where, str, "a string")


def get_list(obj: Any, key: str, where: str) -> list:
    return _get_typed(obj, key, where, list, "a list")


def get_int_list(obj: Any, key: str, where: str) -> List[int]:
    v = get_list(obj, key, where)
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int):
            raise format_error(f"{where}.{key}[{i}]", f"expected an int, got {type(x).__name__}")
    return v


def encode_array(arr: np.ndarray) -> dict:
    """A NumPy array as ``{"dtype": "<i4", "shape": [...], "b64": base64 of the raw
    little-endian bytes}`` (compact and exact; the envelope's checksum covers the text)."""
    arr = np.asarray(arr)
    le = arr.dtype.newbyteorder("<") if arr.dtype.itemsize > 1 else arr.dtype
    data = np.ascontiguousarray(arr, dtype=le).tobytes()
    return {"dtype": le.str, "shape": list(arr.shape), "b64": base64.b64encode(data).decode("ascii")}


def decode_array(obj: Any, where: str, dtype: str, ndim: int = 1) -> np.ndarray:
    """Inverse of :func:`encode_array`; the stored dtype must be ``dtype`` (e.g. ``"<i4"``)
    and the byte count must match the shape.  Returns a read-only array."""
    got = get_str(obj, "dtype", where)
    if got != np.dtype(dtype).str:
        raise format_error(f"{where}.dtype", f"expected {np.dtype(dtype).str!r}, got {got!r}")
    shape = get_int_list(obj, "shape", where)
    if len(shape) != ndim or any(n < 0 for n in shape):
        raise format_error(f"{where}.shape", f"expected {ndim} non-negative sizes, got {shape}")
    text = get_str(obj, "b64", where)
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise format_error(f"{where}.b64", f"invalid base64 ({exc})") from None
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(raw) != count * dt.itemsize:
        raise format_error(
            f"{where}.b64", f"{len(raw)} bytes for shape {shape} of {dt.str} (expected "
            f"{count * dt.itemsize})"
        )
    out = np.frombuffer(raw, dtype=dt).reshape(shape)
    if not dt.isnative:
        out = out.astype(dt.newbyteorder("="))
        out.setflags(write=False)
    return out


def get_array(obj: Any, key: str, where: str, dtype: str, ndim: int = 1) -> np.ndarray:
    return decode_array(get_field(obj, key, where), f"{where}.{key}", dtype, ndim)
