# Helper threads for the warm-up (``MaskCache.precompute``), inline C, no Python objects:
# * xm_spawn(fn, arg): start a thread running fn(arg); returns a handle, or NULL when no
#   thread could be started (the caller then does the work itself);
# * xm_join(handle): wait for it and free the handle;
# * xm_lower_priority(): the calling thread yields the CPU to the process's other threads
#   (Linux: nice +10 for this thread only; elsewhere nothing).  Warm-up helpers lower their
#   priority so a server thread that wakes up while they run gets a core at once, and they
#   still use every idle core.  The helpers are our own threads, started and joined per call,
#   so the lowered priority never leaks into a thread pool other code shares (OpenMP's);
# * xm_fetch_add(p, k): atomic ``old = *p; *p += k; return old``.
from xmask.runtime._types cimport int64_t


cdef extern from *:
    """
    #include <stdlib.h>
    #include <stdint.h>
    #if defined(_WIN32)
    /* no helper threads: the calling thread does the whole warm-up */
    static void* xm_spawn(void* (*fn)(void*), void* arg) { (void)fn; (void)arg; return NULL; }
    static void xm_join(void* h) { (void)h; }
    static void xm_lower_priority(void) {}
    static int64_t xm_fetch_add(volatile int64_t* p, int64_t k) { int64_t o = *p; *p += k; return o; }
    #else
    #include <pthread.h>
    #if defined(__linux__)
    #include <sys/resource.h>
    #include <sys/syscall.h>
    #include <unistd.h>
    #endif
    static void* xm_spawn(void* (*fn)(void*), void* arg) {
        pthread_t* t = (pthread_t*)malloc(sizeof(pthread_t));
        if (t == NULL) return NULL;
        if (pthread_create(t, NULL, fn, arg) != 0) { free(t); return NULL; }
        return (void*)t;
    }
    static void xm_join(void* h) {
        if (h == NULL) return;
        pthread_join(*(pthread_t*)h, NULL);
        free(h);
    }
    static void xm_lower_priority(void) {
    #if defined(__linux__)
        /* on Linux a thread id names one thread: only this one is reniced */
        pid_t tid = (pid_t)syscall(SYS_gettid);
        int cur = getpriority(PRIO_PROCESS, (id_t)tid);
        setpriority(PRIO_PROCESS, (id_t)tid, cur + 10 > 19 ? 19 : cur + 10);
    #endif
    }
    static int64_t xm_fetch_add(volatile int64_t* p, int64_t k) {
        return __atomic_fetch_add(p, k, __ATOMIC_RELAXED);
    }
    #endif
    """
    void* xm_spawn(void* (*fn)(void*) noexcept nogil, void* arg) noexcept nogil
    void xm_join(void* h) noexcept nogil
    void xm_lower_priority() noexcept nogil
    int64_t xm_fetch_add(int64_t* p, int64_t k) noexcept nogil
