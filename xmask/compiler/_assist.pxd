# Helper threads for a compile kernel that the calling thread runs too (inline C, no GIL):
# * xa_begin(fn, arg, n): offer fn(arg) to n helper threads and return at once; returns how
#   many were offered (0 when another compile holds the helpers or no thread could start: the
#   caller then does all the work itself).
# * xa_end(): withdraw the offer and wait for the helpers that took it to return.
#
# fn must share its work through an atomic counter (xm_fetch_add, runtime/_atomic.pxd), so
# whoever is free takes the next piece: the caller runs fn too and never waits for a helper
# that has not started (a helper woken late finds nothing left and returns at once).  Why not
# the warm-up pool (runtime/_workers): its threads run at a lower OS priority and its caller
# only waits; a compile on the path to a first mask wants a helper at the caller's priority,
# and none at all on a busy machine (the caller's own work is never delayed by one).  Helpers
# never touch Python objects and so need no thread state.  After a fork the child starts new
# helpers.
cimport xmask.runtime._spawn  # xm_spawn, used by the C below


cdef extern from *:
    """
    #include <stdint.h>
    typedef void (*xa_fn)(void* arg);
    #if defined(_WIN32)
    static int xa_begin(xa_fn fn, void* arg, int n) { (void)fn; (void)arg; (void)n; return 0; }
    static void xa_end(void) {}
    #else
    #include <pthread.h>
    #include <unistd.h>
    static pthread_mutex_t xa_owner = PTHREAD_MUTEX_INITIALIZER;  /* one compile at a time */
    static pthread_mutex_t xa_lock = PTHREAD_MUTEX_INITIALIZER;   /* the fields below */
    static pthread_cond_t xa_work = PTHREAD_COND_INITIALIZER;
    static pthread_cond_t xa_done = PTHREAD_COND_INITIALIZER;
    static pid_t xa_pid = 0;
    static int xa_threads = 0, xa_offered = 0, xa_active = 0;
    static xa_fn xa_job = NULL;
    static void* xa_arg = NULL;

    static void* xa_main(void* unused) {
        xa_fn fn;
        void* arg;
        (void)unused;
        pthread_mutex_lock(&xa_lock);
        for (;;) {
            while (xa_offered == 0)
                pthread_cond_wait(&xa_work, &xa_lock);
            xa_offered--;
            xa_active++;
            fn = xa_job;
            arg = xa_arg;
            pthread_mutex_unlock(&xa_lock);
            fn(arg);
            pthread_mutex_lock(&xa_lock);
            if (--xa_active == 0)
                pthread_cond_broadcast(&xa_done);
        }
        return NULL;
    }

    static int xa_begin(xa_fn fn, void* arg, int n) {
        if (n <= 0 || pthread_mutex_trylock(&xa_owner) != 0)
            return 0;
        if (xa_pid != getpid()) {
            /* a new process (or the first call): the parent's threads are not here */
            xa_pid = getpid();
            xa_threads = xa_offered = xa_active = 0;
            pthread_mutex_init(&xa_lock, NULL);
            pthread_cond_init(&xa_work, NULL);
            pthread_cond_init(&xa_done, NULL);
        }
        xa_threads = xm_spawn(xa_main, xa_threads, n);
        if (n > xa_threads)
            n = xa_threads;
        if (n <= 0) {
            pthread_mutex_unlock(&xa_owner);
            return 0;
        }
        pthread_mutex_lock(&xa_lock);
        xa_job = fn;
        xa_arg = arg;
        xa_offered = n;
        pthread_cond_broadcast(&xa_work);
        pthread_mutex_unlock(&xa_lock);
        return n;
    }

    static void xa_end(void) {
        pthread_mutex_lock(&xa_lock);
        xa_offered = 0;
        while (xa_active > 0)
            pthread_cond_wait(&xa_done, &xa_lock);
        xa_job = NULL;
        xa_arg = NULL;
        pthread_mutex_unlock(&xa_lock);
        pthread_mutex_unlock(&xa_owner);
    }
    #endif
    """
    ctypedef void (*xa_fn)(void* arg) noexcept nogil
    int xa_begin(xa_fn fn, void* arg, int n) noexcept nogil
    void xa_end() noexcept nogil
