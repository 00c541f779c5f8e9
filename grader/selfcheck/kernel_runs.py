"""What each code cell's latest run did in this kernel: raised, was interrupted, or ran.

``grader check`` fails the ``notebook`` item at the first cell that raises.  ``check()``
cannot run the cells again, so it asks the kernel what their latest runs did.  The
kernel keeps each run's code (``_ih``, by execution count) but not its outcome; the
outcome comes from, best first:

1. a ``post_run_cell`` hook ``check()`` installs, for the runs after the first check;
2. the notebook file as last saved, when a cell's saved execution count is that run's;
3. the kernel's last error (``sys.last_value``), for the run of the cell it came from.

4. what the kernel lacks: a run after which a name the cell's top level binds is not
   in the namespace raised before binding it; an import of a module that is not
   installed is that ModuleNotFoundError, anything else is named as a cell that stopped
   (its error is not known, only that there was one).

A run with none of these raised nothing, as far as ``check()`` can tell: after "Run
All Cells" that is so (a run that raised stops the others), and the worked examples are
run again whatever their first run did.  What it misses is a cell other than a worked
example, run on its own, that raised after binding every name, before the kernel's last
error, in the first check of a kernel: saving the notebook (Ctrl+S) shows it, and so
does every check after the first.
"""
from __future__ import annotations

import contextlib
import importlib.util
import linecache
import sys
import traceback
from pathlib import Path

from grader import expected_outputs as eo
from grader.kernel.runtime import error_fact
from grader.pipeline.judge.broken_cells import bound_names

INTERRUPTED = "KeyboardInterrupt"
RUNS: dict[int, tuple[str, dict | None]] = {}  # execution count -> its code and error (None: none)
WATCHED: list = []  # the shells the hook is installed in


def kernel_shell(namespace: dict):
    """The IPython shell whose namespace this is, or None (a plain namespace, in tests)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "user_ns", None) is namespace else None


def watch(shell) -> None:
    """Record each later run's outcome (once per shell)."""
    if any(s is shell for s in WATCHED):
        return

    def record(result) -> None:
        exc = result.error_in_exec or result.error_before_exec
        if isinstance(result.execution_count, int) and getattr(result.info, "store_history", False):
            RUNS[result.execution_count] = (str(getattr(result.info, "raw_cell", "")).strip(),
                                            None if exc is None else error_fact(exc)["error"])

    shell.events.register("post_run_cell", record)
    WATCHED.append(shell)


def last_error(shell, history: list) -> tuple[int, dict] | None:
    """The kernel's last error and the execution count of its cell's latest run (that
    cell's code must be the history's at that count)."""
    exc = getattr(sys, "last_value", None)
    if exc is None:
        return None
    known = getattr(getattr(shell, "compile", None), "_filename_map", {})
    # The outermost cell on the way is the one that was run; a cell further in only
    # defined the function that raised (a scratch cell calling a class of cell 5 is
    # the scratch cell's error, not cell 5's). A SyntaxError names its cell as filename.
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)] + [getattr(exc, "filename", None)]
    file = next((f for f in files if f in known), None)
    count = known.get(file) if isinstance(file, str) else None
    if not isinstance(file, str) or not isinstance(count, int) or not 0 < count < len(history):
        return None
    if "".join(linecache.getlines(file)).strip() != str(history[count]).strip():
        return None
    return count, error_fact(exc)["error"]


def saved_error(cell: dict) -> dict | None:
    """The error a saved cell's outputs show, as ``grader check``'s worker records it."""
    from grader.cells import cell_error

    for out in cell.get("outputs") or []:
        if isinstance(out, dict) and out.get("output_type") == "error":
            return cell_error("\n".join(str(line) for line in out.get("traceback") or []))
    return None


def saved_in_this_kernel(namespace: dict) -> bool:
    """Was the notebook file saved since this kernel started (its outputs may be this
    kernel's, not a previous one's with the same execution counts)?"""
    import psutil

    session = namespace.get("__session__")
    for path in (Path(str(session)), Path(Path(str(session)).name)):
        with contextlib.suppress(OSError):
            return path.stat().st_mtime >= psutil.Process().create_time()
    return False


def outcome(count: int, cell: dict, last: tuple[int, dict] | None, saved: bool, raw: str) -> dict | None:
    """The error of the run numbered ``count`` of ``cell`` (``raw``: its code as typed),
    None if it raised nothing."""
    if count in RUNS and RUNS[count][0] == raw:
        return RUNS[count][1]
    if saved and cell.get("execution_count") == count:
        return saved_error(cell)
    if last is not None and last[0] == count:
        return last[1]
    return None


def stopped_early(raw: str, namespace: dict) -> dict | None:
    """The error record of a run that ended before binding a name its top level binds
    (the kernel lacks it), or None: the import of a module that is not installed, as
    Python words it, or else the name it never reached."""
    for name, module, line in bound_names(raw):
        if name in namespace:
            continue
        top = module.split(".")[0]
        with contextlib.suppress(ImportError, ValueError):
            if top and importlib.util.find_spec(top) is None:
                return {"type": "ModuleNotFoundError", "message": f"No module named '{top}'", "line": line}
        return {"type": eo.STOPPED, "message": "", "line": "", "name": name}
    return None


def failed_runs(namespace: dict, cells: list | None, python_source) -> list[dict]:
    """The code cells (numbered from 0, in the worker's records' shape) whose latest run
    in this kernel raised, as far as it can be seen; [] outside a kernel."""
    shell = kernel_shell(namespace)
    history = namespace.get("_ih")
    if shell is None or cells is None or not isinstance(history, list):
        return []
    watch(shell)
    last, saved = last_error(shell, history), saved_in_this_kernel(namespace)
    now = len(history) - 1  # the check's own cell
    latest: dict[str, int] = {}
    for count, source in enumerate(history[:now]):
        latest[str(source).strip()] = count
    records = []
    code = [c for c in cells if c.get("cell_type") == "code"]
    for number, cell in enumerate(code):
        raw = eo.source_text(cell)
        ran = latest.get(python_source(raw).strip())
        error = None if not ran else outcome(ran, cell, last, saved, raw.strip()) or stopped_early(raw, namespace)
        if error is not None:
            records.append({"cell": number, "passed": False, "error": error})
    return records
