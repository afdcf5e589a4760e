"""OS threads for the simulator's CUDA threads, started once and reused.

The simulator runs each CUDA thread of a block that may wait for another (a barrier, a
spin on a lock) as an OS thread of its own, and Numba starts a new one for every thread
of every block: about 0.09 ms each, half the time of a small launch of a lock's kernel
(1,024 threads: 0.09 s of 0.18 s). PooledThread.start hands a CUDA thread (a
kernel.BlockThread, never started itself) to an idle OS thread of this pool instead, or
to a new one where none is idle, and waits until that thread has taken it, as
Thread.start waits for a new thread: the threads take their turns as before. While it
runs, `threading.current_thread()` is that BlockThread, as in a thread of its own, so
the simulator's kernel API (threadIdx, barriers) and its users see what they saw; its
is_alive() says whether it still runs. Which CUDA threads run, and with what, is
unchanged; a process starts an OS thread per CUDA thread it runs at once, not per CUDA
thread it runs.

A fork leaves the child none of these OS threads, so the child forgets them (_forget)."""

import os
import sys
import threading

from numba.cuda.simulator import kernel


class PooledThread(kernel.BlockThread):
    """A CUDA thread run by a thread of the pool: alive from `start` until it returns."""

    _done = True

    def start(self):
        self._done = False
        _idle_or_new().run(self)

    def is_alive(self):
        return not self._done


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
        while True:
            self.given.acquire()
            cuda_thread, self.cuda_thread = self.cuda_thread, None
            threading._active[me] = cuda_thread  # current_thread() is the CUDA thread
            self.taken.release()
            try:
                cuda_thread.run()  # BlockThread.run: its error goes to .exception
            except SystemExit:  # ends the CUDA thread only, as it ends an OS thread
                pass
            except BaseException:
                threading.excepthook(threading.ExceptHookArgs([*sys.exc_info(), cuda_thread]))
            finally:
                threading._active[me] = own
                with _LOCK:
                    _IDLE.append(self)
                cuda_thread._done = True


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
