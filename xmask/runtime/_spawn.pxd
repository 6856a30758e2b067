# xm_spawn(main, have, want): start detached threads running ``main`` until ``want`` run
# (``have`` already do); returns how many run now (fewer when the OS refuses one).  The
# thread-start step of both pools of C threads: the warm-up pool (runtime/_workers) and the
# compile helpers (compiler/_assist).  Inline C, POSIX only (neither pool starts a thread on
# Windows).
cdef extern from *:
    """
    #if !defined(_WIN32) && !defined(XM_SPAWN_DEFINED)
    #define XM_SPAWN_DEFINED
    #include <pthread.h>
    static int xm_spawn(void* (*main)(void*), int have, int want) {
        pthread_t t;
        pthread_attr_t attr;
        if (have < want && pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            while (have < want && pthread_create(&t, &attr, main, NULL) == 0)
                have++;
            pthread_attr_destroy(&attr);
        }
        return have;
    }
    #endif
    """
