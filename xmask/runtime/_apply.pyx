"""CPU kernel of ``apply_token_bitmask_inplace``: write -inf where a bitmask row disallows a token.

Work follows the disallowed tokens, not the vocabulary: a word of 32 allowed tokens (-1) is
skipped with one compare, a word of 32 disallowed tokens (0) is one run of 32 stores, and a
mixed word visits only its clear bits.  Inside a JSON string almost every word is -1, so a
128,256-wide row costs ~4,000 compares instead of unpacking 128,256 bits (the NumPy path this
replaces was 4-7x slower than XGrammar on such dense masks).

The logits element is written as a bit pattern (-inf of float16, bfloat16, float32 or
float64), so one kernel per element width serves every float dtype and the caller needs no
bfloat16 support from NumPy.

Example::

    >>> import numpy as np
    >>> logits = np.zeros((1, 40), np.float32)
    >>> bitmask = np.array([[0b101, -1]], np.int32)
    >>> fill_rows(logits, bitmask, 40, None, np.array(-np.inf, np.float32))
    >>> np.isfinite(logits[0, :4]).tolist()
    [True, False, True, False]
"""

cimport cython
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t, uint8_t

from xmask.runtime._types cimport word_t, intp_t


cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil

# Below this many bitmask words per call the GIL is kept: releasing it costs a switch-interval
# wait (~5 ms) whenever another Python thread is busy, and 65,536 words (16 rows of Llama-3)
# take well under a millisecond.
cdef intp_t _NOGIL_MIN_WORDS = 65536


ctypedef fused elem_t:
    uint16_t
    uint32_t
    uint64_t


cdef inline void _fill_row(elem_t* out, const word_t* bits, intp_t width,
                           elem_t pattern) noexcept nogil:
    cdef intp_t n_words = (width + 31) >> 5
    cdef intp_t w, k, base
    cdef word_t clear
    for w in range(n_words):
        clear = ~bits[w]
        if clear == 0:
            continue
        base = w << 5
        if base + 32 > width:  # the last word may reach past the masked width
            clear &= (<word_t>0xFFFFFFFF) >> (base + 32 - width)
        if clear == <word_t>0xFFFFFFFF:
            for k in range(32):
                out[base + k] = pattern
            continue
        while clear:
            out[base + __builtin_ctz(clear)] = pattern
            clear &= clear - 1


cdef void _fill_all(uint8_t* logits, intp_t l_stride, int elem, const uint8_t* bitmask,
                    intp_t b_stride, const int64_t* rows, intp_t n_rows, intp_t width,
                    uint64_t pattern) noexcept nogil:
    cdef intp_t i, r
    cdef uint8_t* out
    cdef const word_t* bits
    for i in range(n_rows):
        r = rows[i] if rows != NULL else i
        out = logits + r * l_stride
        bits = <const word_t*>(bitmask + r * b_stride)
        if elem == 2:
            _fill_row(<uint16_t*>out, bits, width, <uint16_t>pattern)
        elif elem == 4:
            _fill_row(<uint32_t*>out, bits, width, <uint32_t>pattern)
        else:
            _fill_row(<uint64_t*>out, bits, width, pattern)


def can_fill(logits, bitmask) -> bool:
    """Whether ``fill_rows`` takes these 2-D NumPy arrays: 2-, 4- or 8-byte elements, native
    byte order, aligned, columns contiguous (rows may be strided), writable logits, int32
    bitmask words contiguous within a row."""
    return (
        logits.ndim == 2 and bitmask.ndim == 2
        and logits.itemsize in (2, 4, 8) and logits.dtype.isnative
        and logits.flags.writeable and logits.flags.aligned
        and (logits.shape[1] <= 1 or logits.strides[1] == logits.itemsize)
        and bitmask.dtype == "int32" and bitmask.dtype.isnative and bitmask.flags.aligned
        and (bitmask.shape[1] <= 1 or bitmask.strides[1] == 4)
    )


@cython.boundscheck(True)
def fill_rows(logits, bitmask, Py_ssize_t width, rows, value):
    """``logits[r, :width] = value`` wherever bitmask row ``r`` disallows the token, in place,
    for every row (``rows`` None) or the given rows (int64 array, already range-checked by the
    caller).  Arrays must satisfy ``can_fill``; ``value`` is a NumPy scalar of the logits'
    element width whose bits are written (e.g. -inf as float32, or bfloat16 -inf's int16 bits).
    """
    import numpy as np

    if not can_fill(logits, bitmask):
        raise ValueError("fill_rows: unsupported array layout (check can_fill first)")
    if width < 0 or width > logits.shape[1] or width > 32 * bitmask.shape[1]:
        raise ValueError(f"fill_rows: width {width} out of range")
    cdef int elem = logits.itemsize
    cdef uint64_t pattern = int(np.asarray(value).view(f"u{elem}"))
    cdef const int64_t[::1] row_view
    cdef const int64_t* row_ptr = NULL
    cdef intp_t n_rows = logits.shape[0]
    if rows is not None:
        row_view = np.ascontiguousarray(rows, dtype=np.int64)
        n_rows = row_view.shape[0]
        if n_rows == 0:
            return
        if np.any((np.asarray(row_view) < 0) | (np.asarray(row_view) >= min(logits.shape[0], bitmask.shape[0]))):
            raise ValueError("fill_rows: row index out of range")
        row_ptr = &row_view[0]
    elif logits.shape[0] != bitmask.shape[0]:
        raise ValueError("fill_rows: logits and bitmask row counts differ")
    if n_rows == 0 or width == 0:
        return
    cdef uint8_t* l_ptr = <uint8_t*><size_t>logits.__array_interface__["data"][0]
    cdef const uint8_t* b_ptr = <const uint8_t*><size_t>bitmask.__array_interface__["data"][0]
    cdef intp_t l_stride = logits.strides[0]
    cdef intp_t b_stride = bitmask.strides[0]
    cdef intp_t work = n_rows * ((width + 31) >> 5)
    if work < _NOGIL_MIN_WORDS:
        _fill_all(l_ptr, l_stride, elem, b_ptr, b_stride, row_ptr, n_rows, width, pattern)
    else:
        with nogil:
            _fill_all(l_ptr, l_stride, elem, b_ptr, b_stride, row_ptr, n_rows, width, pattern)
