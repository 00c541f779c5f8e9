"""``with show_error(): ...`` runs a line that must fail and prints the exception's type and
the first line of its message: what a reader needs, without the traceback's library frames
and the paths of the machine that built the book. The build fails if nothing is raised."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def show_error():
    try:
        yield
    except Exception as error:   # noqa: BLE001 - any exception is the point of the example
        message = str(error).strip().splitlines()
        print(f"{type(error).__name__}: {message[0] if message else ''}")
    else:
        raise AssertionError("the example was meant to raise an exception, and did not")
