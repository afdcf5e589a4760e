"""OS threads for the simulator's CUDA threads, started once and reused.

The simulator runs each CUDA thread of a block that may wait for another (a barrier, a
spin on a lock) as an OS thread of its own, and Numba starts a new one for every thread
of every block: about 0.09 ms each, half the time of a small launch of a lock's kernel
(1,024 threads: 0.09 s of 0.18 s). PooledThread.start hands a CUDA thread (a
kernel.BlockThread, never started itself) to an idle OS thread of this pool instead, or
to a new one where none is idle, and waits until that thread has taken it, as
Thread.start waits for a new thread: the threads take their turns as before. While it
runs, `threading.current_thread()` is that BlockThread, with the OS thread's ids, so the
simulator's kernel API (threadIdx, barriers), the tracer and the lock logic see what
they saw; its is_alive() says whether it still runs. Each runs in a fresh context
(NumPy's error settings live there) with threading's trace and profile hooks, as a new
thread would; a `threading.local` is the one thing it shares with the CUDA threads that
ran on that OS thread before (no kernel a GPU compiles can use one). Which CUDA threads
run, and with what, is unchanged; a process starts an OS thread per CUDA thread it
runs at once, not per CUDA thread it runs. An idle OS thread ends after IDLE_S, and at
most MAX_IDLE wait at once: an idle thread's stack counts against the grader's memory
limit (kernels.grading.confine), as a running one's does.

A fork leaves the child none of these OS threads, so the child forgets them (_forget)."""

import contextvars
import os
import sys
import threading

from numba.cuda.simulator import kernel

IDLE_S = 1.0  # an OS thread idle this long ends: its stack counts against memory limits
MAX_IDLE = 1024  # idle OS threads kept at most: a block's largest number of threads


class PooledThread(kernel.BlockThread):
    """A CUDA thread run by a thread of the pool: alive from `start` until it returns."""

    _done = True

    def __init__(self, *args):
        super().__init__(*args)
        self.syncthreads_event = _Gate()

    def start(self):
        self._done = False  # before the handoff: it may end before this returns
        try:
            _idle_or_new().run(self)
        except BaseException:  # no OS thread took it (none could start; interrupted)
            self._done = True
            raise

    def is_alive(self):
        return not self._done


class _Gate:
    """A block barrier's wait, as BlockThread uses its threading.Event (set by the block's
    manager, waited for and cleared by the thread), made of one lock: an Event's wait
    and set run a Condition's dozen steps in Python, and every thread of a block waits
    at every barrier (half the time of a launch of the mutex chapter's block sums).
    It has only what they call: no is_set, no wait with a timeout."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()  # held: not set

    def set(self):
        try:
            self._lock.release()
        except RuntimeError:  # set already
            pass

    def wait(self):
        self._lock.acquire()  # until set; the wait takes the set with it, as clear would

    def clear(self):
        pass


class _Runner:
    """One OS thread of the pool, and the CUDA thread it is given next."""

    def __init__(self):
        self.given, self.taken = threading.Lock(), threading.Lock()
        self.given.acquire()  # released when a CUDA thread is given
        self.taken.acquire()  # released when this OS thread has taken it
        self.cuda_thread = None
        threading.Thread(target=self._serve, name="simulator thread", daemon=True).start()

    def run(self, cuda_thread):
        self.cuda_thread = cuda_thread
        self.given.release()
        self.taken.acquire()  # as Thread.start waits: the CUDA thread runs first

    def _serve(self):
        me = threading.get_ident()
        own = threading._active[me]
        while self._next():
            cuda_thread, self.cuda_thread = self.cuda_thread, None
            # what a thread of its own would have: its ids, a fresh context (NumPy's
            # error settings live there), threading's trace and profile hooks
            cuda_thread._ident, cuda_thread._native_id = me, own.native_id
            threading._active[me] = cuda_thread  # current_thread() is the CUDA thread
            sys.settrace(threading._trace_hook)
            sys.setprofile(threading._profile_hook)
            self.taken.release()
            try:
                contextvars.Context().run(cuda_thread.run)  # its error goes to .exception
            except SystemExit:  # ends the CUDA thread only, as it ends an OS thread
                pass
            except BaseException:
                try:
                    threading.excepthook(threading.ExceptHookArgs(
                        [*sys.exc_info(), cuda_thread]))
                except BaseException:  # as threading's own: the thread must go on
                    pass
            finally:
                sys.settrace(None)
                sys.setprofile(None)
                threading._active[me] = own
                with _LOCK:
                    kept = len(_IDLE) < MAX_IDLE
                    if kept:
                        _IDLE.append(self)
                cuda_thread._done = True
                del cuda_thread  # nothing of it (its frames' arrays) kept while idle
            if not kept:
                return

    def _next(self):
        """Wait for the next CUDA thread: True once given one, False after IDLE_S idle
        (this thread then ends; no one can give it one any more)."""
        if self.given.acquire(timeout=IDLE_S):
            return True
        with _LOCK:
            if self in _IDLE:
                _IDLE.remove(self)
                return False
        self.given.acquire()  # taken from the idle ones just now: its CUDA thread comes
        return True


_IDLE = []  # runners waiting for a CUDA thread
_LOCK = threading.Lock()


def _idle_or_new():
    with _LOCK:
        if _IDLE:
            return _IDLE.pop()
    return _Runner()


def _forget():
    """In a forked child: none of the pool's OS threads, and a lock none of them holds."""
    global _LOCK
    _IDLE.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget)
