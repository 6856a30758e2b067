# The subset-construction kernel's context and entry points (``_determinize.pyx``), for the
# driver that runs it over a grammar's rules (``_rule_dfas.pyx``).
from libc.stdint cimport int32_t, int64_t, uint8_t

from xmask.compiler._ivec cimport IVec, LVec

ctypedef Py_ssize_t isz

cdef extern from *:
    """
    #ifdef _WIN32
    #include <windows.h>
    static double xm_now(void) {
        LARGE_INTEGER f, c;
        QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
        return (double)c.QuadPart / (double)f.QuadPart;
    }
    #else
    #include <time.h>
    static double xm_now(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    #endif
    """
    double xm_now() noexcept nogil

cdef enum:
    ST_OK = 0
    ST_STATES = 1
    ST_HELD = 2
    ST_DEADLINE = 3
    ST_NOMEM = 4
    ST_MEMORY = 5



cdef struct SeqMap:
    int32_t* slots   # entry index, -1 = empty
    isz cap          # power of two
    IVec pool        # keys, concatenated
    LVec off         # entry i's key is pool[off[i] : off[i + 1]]
    IVec val
    LVec hsh



cdef struct Ctx:
    # NFA (CSR)
    const int32_t* eps_off
    const int32_t* eps_dst
    const int32_t* b_off
    const int32_t* b_lo  # byte edges as inclusive byte ranges, classes by bclass
    const int32_t* b_hi
    const uint8_t* bclass
    const int32_t* b_dst
    const int32_t* c_off
    const int32_t* c_rule
    const int32_t* c_dst
    isz nc
    int32_t end
    # limits
    int64_t max_states
    int64_t held_cap
    int64_t total_so_far
    int64_t budget
    double deadline       # xm_now() value, or < 0 for none
    int64_t mem_cap       # bytes the tables below may hold (<= 0: none)
    int64_t mem_base      # bytes of the rules emitted so far (global tables)
    # closure scratch
    int32_t* mark
    # singleton raw target sets {t} -> DFA state, valid when one_gen[t] == gen (the rule
    # being determinized): the common case of target(), answered without hashing
    int32_t* one_val
    int32_t* one_gen
    int32_t gen
    int32_t stamp
    IVec stack
    IVec clos
    # per-rule DFA under construction; state d's row is the runs run_off[d] .. run_off[d + 1]
    # (first class, target or -1), covering the classes 0 .. nc in order, adjacent runs
    # differing in target
    SeqMap index         # subset -> DFA state (entry i <-> state i)
    SeqMap memo          # raw target set -> DFA state
    IVec run_off
    IVec run_col
    IVec run_tgt
    IVec finals
    IVec call_src
    IVec call_rule
    IVec call_dst
    int64_t held
    # per-state scratch
    IVec cur
    LVec ev              # byte edge events of the state being expanded (row_of)
    LVec ev2             # sort_keys' scratch
    LVec evend           # row_sweep: the edges' ends
    IVec cnt
    int32_t* acnt        # NFA state -> live edges to it at the sweep position (zero between rows)
    IVec act             # the raw targets live at the sweep position, ascending
    IVec prev            # the last non-empty target set row_of looked up
    LVec pairs
    IVec tmp


cdef int sm_init(SeqMap* m, isz hint) noexcept nogil
cdef void sm_free(SeqMap* m) noexcept nogil
cdef int determinize(Ctx* c, int32_t start) noexcept nogil
