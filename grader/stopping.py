"""Ctrl-C in ``grader check`` and ``grader grade``: a request to stop.

Ctrl-C raises no KeyboardInterrupt here, which could land anywhere (between
starting a worker and noting it, halfway through an import).  It only makes
``requested()`` true, and the grader stops at its next safe point (the
supervisor's poll, the batch's wait): no worker starts after it, running workers
are killed with their kernels, and the gradebook written so far stays valid.

``requested()`` is true from the moment the signal arrives: Python runs a signal
handler only when the main thread next gets the processor, which on a loaded
machine can come after another thread has started a worker, but its C handler
writes the signal's number to a wakeup pipe at once, and the pipe is what every
thread looks at.  The Python handler sets ``STOP`` too, and takes no lock the main
thread could hold: the main thread never waits on ``STOP``.

This module is the first the command line imports, so that a Ctrl-C during the
other imports is caught too.
"""
from __future__ import annotations

import os
import select
import signal
import threading

STOP = threading.Event()
_wakeup: int | None = None  # read end of the pipe the C-level signal handler writes to


class Interrupted(Exception):
    """Grading stopped because Ctrl-C was pressed."""


def catch_ctrl_c() -> None:
    global _wakeup
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set signal handlers
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, lambda signum, frame: STOP.set())
    _wakeup = read


def requested() -> bool:
    """Has Ctrl-C been pressed (in a command that catches it)?  The pipe holds the number
    of each signal that arrived: only SIGINT's counts (``check()``'s time limit, SIGALRM,
    may share the process)."""
    if STOP.is_set():
        return True
    while _wakeup is not None and select.select([_wakeup], [], [], 0)[0]:
        try:
            arrived = os.read(_wakeup, 512)
        except BlockingIOError:
            break
        if not arrived:
            break
        if signal.SIGINT in arrived:
            STOP.set()
    return STOP.is_set()
