# The warm-up's thread pool (``MaskCache.precompute``), inline C:
# * xm_pool_run(fn, arg, n, &error): run fn(arg) on n pool threads at once and wait for them
#   (called without the GIL).  Returns how many threads ran it: 0 when the pool is busy with
#   another call or no thread could be started (the caller then runs fn itself).  fn returns
#   0, or -1 with an exception set on its thread's Python thread state; the first such
#   exception is stored in *error (a new reference; NULL when none).
# * xm_lower_priority(): the calling thread yields the CPU to the process's other threads
#   (Linux: nice +10 for this thread only; elsewhere nothing).
# (the chunk counter shared by the threads: xm_fetch_add, runtime/_atomic.pxd)
#
# Why a pool of our own: its threads run at a lower OS priority (a server thread that wakes
# up while they classify gets a core at once, and they still use every idle core), which must
# never leak into a pool other code shares (OpenMP's).  Each thread makes its Python thread
# state once, when it starts (at the creator's priority), for the classifier's rare error
# path, and never takes the GIL after that unless fn raises: a low-priority thread holding the
# GIL could be preempted while a server thread waits for it.  Threads are made on demand (at
# most the CPUs the process may use, capped by the caller) and wait on a condition variable
# between calls.  After a fork the child starts a new pool (CPython deleted the old threads'
# states).
from cpython.ref cimport PyObject

cimport xmask.runtime._spawn  # xm_spawn, used by the C below

from xmask.runtime._types cimport int64_t


cdef extern from *:
    """
    #include <Python.h>
    #include <stdlib.h>
    #include <stdint.h>
    typedef int (*xm_job_fn)(void* arg);
    #if defined(_WIN32)
    static int xm_pool_run(xm_job_fn fn, void* arg, int n, PyObject** error) {
        (void)fn; (void)arg; (void)n; *error = NULL; return 0;
    }
    static void xm_lower_priority(void) {}
    #else
    #include <pthread.h>
    #include <unistd.h>
    #if defined(__linux__)
    #include <sys/resource.h>
    #include <sys/syscall.h>
    #endif
    static void xm_lower_priority(void) {
    #if defined(__linux__)
        /* on Linux a thread id names one thread: only this one is reniced */
        pid_t tid = (pid_t)syscall(SYS_gettid);
        int cur = getpriority(PRIO_PROCESS, (id_t)tid);
        setpriority(PRIO_PROCESS, (id_t)tid, cur + 10 > 19 ? 19 : cur + 10);
    #endif
    }

    static pthread_mutex_t xm_pool_run_lock = PTHREAD_MUTEX_INITIALIZER;  /* one call at a time */
    static pthread_mutex_t xm_pool_lock = PTHREAD_MUTEX_INITIALIZER;      /* the fields below */
    static pthread_cond_t xm_pool_work = PTHREAD_COND_INITIALIZER;
    static pthread_cond_t xm_pool_done = PTHREAD_COND_INITIALIZER;
    static pid_t xm_pool_pid = 0;
    static int xm_pool_threads = 0;
    static xm_job_fn xm_pool_fn = NULL;
    static void* xm_pool_arg = NULL;
    static int xm_pool_wanted = 0, xm_pool_taken = 0, xm_pool_running = 0;
    static PyObject* xm_pool_error = NULL;

    static void* xm_pool_main(void* unused) {
        PyThreadState* ts;
        PyObject *typ, *val, *tb;
        xm_job_fn fn;
        void* arg;
        (void)unused;
        PyGILState_Ensure();
        ts = PyEval_SaveThread();
        xm_lower_priority();
        pthread_mutex_lock(&xm_pool_lock);
        for (;;) {
            while (xm_pool_taken >= xm_pool_wanted)
                pthread_cond_wait(&xm_pool_work, &xm_pool_lock);
            xm_pool_taken++;
            fn = xm_pool_fn;
            arg = xm_pool_arg;
            pthread_mutex_unlock(&xm_pool_lock);
            if (fn(arg) < 0) {
                PyEval_RestoreThread(ts);
                PyErr_Fetch(&typ, &val, &tb);
                PyErr_NormalizeException(&typ, &val, &tb);
                if (val != NULL && tb != NULL)
                    PyException_SetTraceback(val, tb);
                Py_XDECREF(typ);
                Py_XDECREF(tb);
                pthread_mutex_lock(&xm_pool_lock);
                if (xm_pool_error == NULL) {
                    xm_pool_error = val;
                    val = NULL;
                }
                pthread_mutex_unlock(&xm_pool_lock);
                Py_XDECREF(val);
                ts = PyEval_SaveThread();
            }
            pthread_mutex_lock(&xm_pool_lock);
            if (--xm_pool_running == 0)
                pthread_cond_broadcast(&xm_pool_done);
        }
        return NULL;
    }

    static int xm_pool_run(xm_job_fn fn, void* arg, int n, PyObject** error) {
        *error = NULL;
        if (pthread_mutex_trylock(&xm_pool_run_lock) != 0)
            return 0;
        if (xm_pool_pid != getpid()) {
            /* a new process (or the first call): the parent's threads are not here */
            xm_pool_pid = getpid();
            xm_pool_threads = 0;
            xm_pool_wanted = xm_pool_taken = xm_pool_running = 0;
            xm_pool_error = NULL;
            pthread_mutex_init(&xm_pool_lock, NULL);
            pthread_cond_init(&xm_pool_work, NULL);
            pthread_cond_init(&xm_pool_done, NULL);
        }
        xm_pool_threads = xm_spawn(xm_pool_main, xm_pool_threads, n);
        if (n > xm_pool_threads)
            n = xm_pool_threads;
        if (n > 0) {
            pthread_mutex_lock(&xm_pool_lock);
            xm_pool_fn = fn;
            xm_pool_arg = arg;
            xm_pool_error = NULL;
            xm_pool_taken = 0;
            xm_pool_running = n;
            xm_pool_wanted = n;
            pthread_cond_broadcast(&xm_pool_work);
            while (xm_pool_running > 0)
                pthread_cond_wait(&xm_pool_done, &xm_pool_lock);
            xm_pool_wanted = 0;
            *error = xm_pool_error;
            xm_pool_error = NULL;
            pthread_mutex_unlock(&xm_pool_lock);
        }
        pthread_mutex_unlock(&xm_pool_run_lock);
        return n;
    }
    #endif
    """
    ctypedef int (*xm_job_fn)(void* arg) noexcept nogil
    int xm_pool_run(xm_job_fn fn, void* arg, int n, PyObject** error) noexcept nogil
    void xm_lower_priority() noexcept nogil
