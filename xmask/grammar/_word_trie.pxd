# The trie of sorted distinct words (code points), for the three readers of a word list's
# complement: the emitter of its expression (grammar._word_complement), the NFA builder's
# WordComplement (compiler._nfa_build) and the inliner's size estimate (compiler._rule_scan).
# Nodes in preorder: node 0 is the root, a node's children follow it in code point order (the
# words are sorted, so a word's new nodes are the ones past its common prefix with the
# previous word).
from libc.stdlib cimport free, malloc
from libc.string cimport memset


cdef struct WordTrie:
    Py_ssize_t n        # nodes, the root included
    int* cp             # the code point leading into each node (the root's: 0)
    int* first_kid      # -1: none
    int* next_sib       # -1: none
    char* word_end      # 1 where a word ends


cdef inline Py_ssize_t common_prefix(str a, str b) except -1:
    cdef Py_ssize_t k = min(len(a), len(b)), i = 0
    while i < k and a[i] == b[i]:
        i += 1
    return i


cdef inline Py_ssize_t trie_nodes(words) except -1:
    # the trie's node count (the root included) without building it
    cdef Py_ssize_t n = 1
    cdef str w, prev = ""
    for w in words:
        n += len(w) - common_prefix(w, prev)
        prev = w
    return n


cdef inline void trie_free(WordTrie* t) noexcept:
    free(t.cp)
    free(t.first_kid)
    free(t.next_sib)
    free(t.word_end)
    memset(t, 0, sizeof(WordTrie))


cdef inline int trie_build(words, WordTrie* t) except -1:
    # ``t``: the trie of ``words`` (sorted, distinct); the caller frees it with trie_free,
    # also after a MemoryError
    memset(t, 0, sizeof(WordTrie))
    cdef Py_ssize_t n = trie_nodes(words), nn = 1, i, depth, q, longest = 0
    cdef str w, prev = ""
    cdef int* last_kid = <int*>malloc(n * sizeof(int))
    cdef int* path = NULL  # the previous word's nodes, by depth
    for w in words:
        longest = max(longest, len(w))
    path = <int*>malloc((longest + 1) * sizeof(int))
    t.cp = <int*>malloc(n * sizeof(int))
    t.first_kid = <int*>malloc(n * sizeof(int))
    t.next_sib = <int*>malloc(n * sizeof(int))
    t.word_end = <char*>malloc(n)
    try:
        if (last_kid == NULL or path == NULL or t.cp == NULL or t.first_kid == NULL
                or t.next_sib == NULL or t.word_end == NULL):
            raise MemoryError()
        t.cp[0] = 0
        t.word_end[0] = 0
        t.first_kid[0] = last_kid[0] = t.next_sib[0] = -1
        path[0] = 0
        for w in words:
            depth = common_prefix(w, prev)
            for i in range(depth, len(w)):
                q = path[depth]
                t.cp[nn] = ord(w[i])
                t.word_end[nn] = 0
                t.first_kid[nn] = last_kid[nn] = t.next_sib[nn] = -1
                if last_kid[q] < 0:
                    t.first_kid[q] = <int>nn
                else:
                    t.next_sib[last_kid[q]] = <int>nn
                last_kid[q] = <int>nn
                depth += 1
                path[depth] = <int>nn
                nn += 1
            t.word_end[path[len(w)]] = 1
            prev = w
        t.n = nn
        return 0
    finally:
        free(last_kid)
        free(path)
