# Fast location of a caller's bitmask rows (implemented in _bitmask_view.pyx).
#
# The common bitmasks (a NumPy int32 array, a torch.int32 CPU tensor, 1-D or 2-D, rows
# contiguous) are located in C for ~0.2-0.6 us; anything else, and anything wrong, is left to
# the Python checks in bitmask_rows.py, which accept the rarer layouts and raise the errors.
from xmask.runtime._types cimport intp_t
from libc.stdint cimport uintptr_t


ctypedef struct RowsC:
    uintptr_t address          # row 0
    intp_t stride_words        # distance between rows, in int32 words
    intp_t n_rows


cdef int rows_fast(object bitmask, intp_t n_words, RowsC* out) except -1
cdef intp_t row_index_fast(object index) except -2
