# Monotonic time in seconds (the clock of time.monotonic() on POSIX), for deadlines in nogil
# loops.
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC


cdef inline double monotonic_seconds() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9
