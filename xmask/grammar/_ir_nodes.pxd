# What the compiled IR walks share (grammar._ir_walk, grammar._word_complement,
# compiler._rule_scan, compiler._nfa_build): the node kinds as C-level constants (the walks
# compare every node's exact type with them; set by _ir_nodes.pyx from ir_expr; WORDS, the
# WordComplement, is a leaf to node_items and read by its fields where it matters) and an
# address-keyed hash table (visited nodes by address: every node stays alive in the rule table
# meanwhile, so no int object per node as with id() in a Python set).
from libc.stdlib cimport calloc, free

cdef object BYTES, SEQ, CHOICE, REF, CLASS, REPEAT, TOKENS, EPSILON, WORDS


cdef inline bint is_node_kind(object t) noexcept:
    # one of the six composite or leaf kinds exactly (pointer compares; TokenSet: no)
    return t is BYTES or t is SEQ or t is REF or t is CHOICE or t is CLASS or t is REPEAT


cdef inline object node_items(object e, object t):
    # the sub-expressions of ``e`` (of kind ``t``) as a tuple; None for a leaf or a reference
    if t is SEQ or t is CHOICE:
        return e.items
    if t is REPEAT:
        return (e.item,)
    return None


# ---- a node address -> Py_ssize_t table (open addressing; key 0 = empty) ---------------------------

cdef struct PtrMap:
    size_t* keys
    Py_ssize_t* vals
    size_t mask
    size_t used


cdef inline void pm_free(PtrMap* m) noexcept:
    free(m.keys)
    free(m.vals)
    m.keys = NULL
    m.vals = NULL


cdef inline int pm_init(PtrMap* m, size_t n) except -1:
    # ``n``: a power of two
    m.keys = <size_t*>calloc(n, sizeof(size_t))
    m.vals = <Py_ssize_t*>calloc(n, sizeof(Py_ssize_t))
    m.mask = n - 1
    m.used = 0
    if m.keys == NULL or m.vals == NULL:
        pm_free(m)
        raise MemoryError()
    return 0


cdef inline size_t pm_slot(const PtrMap* m, size_t p) noexcept nogil:
    # the slot holding ``p``, or the empty slot where it would go
    cdef size_t h = ((p >> 4) * <size_t>0x9E3779B97F4A7C15) & m.mask
    while m.keys[h] and m.keys[h] != p:
        h = (h + 1) & m.mask
    return h


cdef inline int pm_grow(PtrMap* m) except -1:
    cdef PtrMap old = m[0]
    cdef size_t i, h
    pm_init(m, (old.mask + 1) * 2)
    for i in range(old.mask + 1):
        if old.keys[i]:
            h = pm_slot(m, old.keys[i])
            m.keys[h] = old.keys[i]
            m.vals[h] = old.vals[i]
    m.used = old.used
    pm_free(&old)
    return 0


cdef inline int pm_put(PtrMap* m, size_t p, Py_ssize_t v) except -1:
    # set ``p``'s value; 1 when ``p`` was new
    cdef size_t h = pm_slot(m, p)
    if m.keys[h]:
        m.vals[h] = v
        return 0
    m.keys[h] = p
    m.vals[h] = v
    m.used += 1
    if m.used * 2 > m.mask:
        pm_grow(m)
    return 1


cdef inline Py_ssize_t pm_get(const PtrMap* m, object x) noexcept:
    # the value of node ``x``'s address, 0 when absent
    cdef size_t h = pm_slot(m, <size_t><void *>x)
    return m.vals[h] if m.keys[h] else 0


cdef inline int pm_mark(PtrMap* m, size_t p, Py_ssize_t stamp) except -1:
    # 1 when ``p``'s value was not ``stamp`` yet (it is now); with one stamp, a set's add
    cdef size_t h = pm_slot(m, p)
    if m.keys[h]:
        if m.vals[h] == stamp:
            return 0
        m.vals[h] = stamp
        return 1
    pm_put(m, p, stamp)
    return 1
