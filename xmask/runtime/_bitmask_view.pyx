"""Fast path of ``bitmask_rows``: locate the rows of the usual bitmasks without Python calls.

``fill_next_token_bitmask`` runs once per token; its kernel takes ~2-10 us, and validating the
bitmask in Python (``bitmask_rows``: NumPy's ``__array_interface__``, torch attribute lookups,
a NamedTuple) cost another 1.5-2 us.  Here a NumPy array goes through the buffer protocol and
a torch tensor through a handful of cached-attribute checks.  Only the exact types
``numpy.ndarray`` and ``torch.Tensor`` with the plain layout are handled; for every other
input ``rows_fast`` returns 0 and the caller runs the Python checks, which also produce the
error messages, so both paths accept and reject exactly the same bitmasks.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_STRIDES, PyBUF_FORMAT, PyBUF_WRITABLE
from libc.stdint cimport uintptr_t

from xmask.runtime._types cimport intp_t

import numpy as np

cdef object _ndarray = np.ndarray
cdef object _tensor = None         # torch.Tensor, cached once a tensor has been seen
cdef object _int32 = None          # torch.int32
cdef object _strided = None        # torch.strided


cdef int _set_rows(uintptr_t addr, int ndim, intp_t n0, intp_t n1, intp_t s0, intp_t s1,
                   intp_t n_words, RowsC* out) noexcept:
    # Shape and element strides -> rows; 0 when the layout needs the Python checks.
    cdef intp_t n_rows, length, step, row_stride
    if ndim == 1:
        n_rows, length, step, row_stride = 1, n0, s0, n0
    elif ndim == 2:
        n_rows, length, step = n0, n1, s1
        row_stride = s0 if n0 > 1 else n1
    else:
        return 0
    if length != n_words or (length > 1 and step != 1) or row_stride < n_words or addr % 4:
        return 0
    out.address = addr
    out.stride_words = row_stride
    out.n_rows = n_rows
    return 1


cdef int _numpy_rows(object arr, intp_t n_words, RowsC* out) except -1:
    cdef Py_buffer buf
    cdef int ok = 0
    cdef bytes fmt
    try:
        PyObject_GetBuffer(arr, &buf, PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE)
    except (BufferError, ValueError, TypeError):
        return 0  # read-only, or not a plain buffer: the Python checks say why
    try:
        fmt = buf.format
        # "i" is a native int32; anything else (byte-swapped, other widths) goes the slow way
        if buf.itemsize == 4 and fmt == b"i" and 1 <= buf.ndim <= 2:
            if buf.ndim == 1:
                ok = _set_rows(<uintptr_t>buf.buf, 1, buf.shape[0], 0, buf.strides[0] // 4, 0,
                               n_words, out)
            elif buf.strides[0] % 4 == 0 and buf.strides[1] % 4 == 0:
                ok = _set_rows(<uintptr_t>buf.buf, 2, buf.shape[0], buf.shape[1],
                               buf.strides[0] // 4, buf.strides[1] // 4, n_words, out)
    finally:
        PyBuffer_Release(&buf)
    return ok


cdef int _torch_rows(object t, intp_t n_words, RowsC* out) except -1:
    if t.dtype is not _int32 or t.layout is not _strided or not t.is_cpu:
        return 0
    shape = t.shape
    strides = t.stride()
    cdef int ndim = len(shape)
    if ndim == 1:
        return _set_rows(<uintptr_t>t.data_ptr(), 1, shape[0], 0, strides[0], 0, n_words, out)
    if ndim == 2:
        return _set_rows(<uintptr_t>t.data_ptr(), 2, shape[0], shape[1], strides[0], strides[1],
                         n_words, out)
    return 0


cdef int rows_fast(object bitmask, intp_t n_words, RowsC* out) except -1:
    """Locate ``bitmask``'s rows of ``n_words`` words into ``out``.  Returns 1 on the fast
    path, 0 when the caller must run the Python checks (``bitmask_rows``)."""
    global _tensor, _int32, _strided
    cdef object kind = type(bitmask)
    if kind is _ndarray:
        return _numpy_rows(bitmask, n_words, out)
    if _tensor is None and kind.__module__ == "torch":
        import torch  # already imported by whoever made the tensor

        _tensor, _int32, _strided = torch.Tensor, torch.int32, torch.strided
    if kind is _tensor:
        return _torch_rows(bitmask, n_words, out)
    return 0


cdef intp_t row_index_fast(object index) except -2:
    """``index`` if it is a plain non-negative int, else -1 (the caller's Python checks decide:
    NumPy integers, 0-d tensors, errors)."""
    # the upper bound keeps a huge int (2**63) from overflowing the C conversion: the slow
    # path then reports it as out of range
    if type(index) is int and 0 <= index <= 0x7FFFFFFF:
        return <intp_t>index
    return -1
