"""Kernel-side half of the grader: call the student's code and record raw facts.

This module is self-contained (standard library and NumPy only). The grader sends
its source into the student's kernel as text, so that nothing the student imports,
patches or replaces in ``sys.modules`` changes the code that runs here.  It never
compares anything: it only records what the student's code returned or raised.
All judging happens in the grader's own process (see ``grader.pipeline.judge.items``).

The same functions run in-process for the in-notebook ``check()``.
"""
import base64
import contextlib
import difflib
import io
import json
import re
import sys
import traceback

import numpy as np

# In a graded kernel the worker's prelude kept, before the student's first cell, the
# functions the checks read and write with; a cell patching json or NumPy later does
# not reach them.  The in-notebook check() has no prelude and uses the modules.
_SAVED = sys.modules.get("_tied_saved")
_dumps, _load, _open = (_SAVED.json_dumps, _SAVED.json_load, _SAVED.open) if _SAVED else (json.dumps, json.load, open)
_asarray, _save, _b64encode = (_SAVED.np_asarray, _SAVED.np_save, _SAVED.b64encode) if _SAVED else \
    (np.asarray, np.save, base64.b64encode)

MAX_TEXT = 300  # characters of an error message kept in a fact


def encode(obj):
    """JSON-able form of nested dicts/lists/tuples holding arrays and scalars."""
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    arr = _asarray(obj)
    if arr.dtype == object:
        raise TypeError(f"cannot encode a value of type {type(obj).__name__}")
    buf = io.BytesIO()
    _save(buf, arr, allow_pickle=False)
    return {"__nd__": _b64encode(buf.getvalue()).decode("ascii")}


def decode(obj):
    """Inverse of ``encode``; arrays come back as NumPy arrays, never pickles."""
    if isinstance(obj, dict):
        if set(obj) == {"__nd__"}:
            return np.load(io.BytesIO(base64.b64decode(obj["__nd__"])), allow_pickle=False)
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


# Where the code of a notebook cell lives: ipykernel compiles each cell as a file
# /tmp/ipykernel_<pid>/<hash>.py, IPython without a kernel as <ipython-input-N-hash>.
CELL_FILE = re.compile(r"(^|/)ipykernel_\d+/[^/]+\.py$|^<ipython-input-|^<cell")
PROBE_FILE = "<tied-probe>"


def clip(text):
    """The first ``MAX_TEXT`` characters of ``text``, for a fact that quotes a message."""
    return str(text)[:MAX_TEXT]


# How JAX's warning for a compilation-cache entry it could not read or write begins (one
# per entry): it costs a compilation, nothing the student caused, so the kernels of
# `grader check` (PYTHONWARNINGS) and the in-notebook check() show none of it.
CACHE_WARNINGS = tuple(f"Error {verb} persistent compilation cache entry" for verb in ("writing", "reading"))

ARRAY_REPRS = ("tensor(", "Array(", "array(")  # how a message may quote an array


def without_reprs(text):
    """``text`` with each quoted array (``tensor([[0.08, ...]])``, ``Array(...)``) put as
    ``tensor(…)``: its numbers say nothing of the reason, and they fill the message."""
    text, out, at = str(text), [], 0
    while True:
        starts = [i for i in (text.find(r, at) for r in ARRAY_REPRS) if i >= 0]
        if not starts:
            return "".join(out) + text[at:]
        start = min(starts)
        opening = text.index("(", start)
        depth, end = 0, len(text)
        for i in range(opening, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        out.append(text[at:opening] + "(…)")
        at = end


def error_text(exc):
    """``Type: message`` of an exception a probe keeps as a fact: arrays it quotes dropped
    (``without_reprs``), at most ``MAX_TEXT`` characters, cut between words."""
    return shorten(f"{type(exc).__name__}: {without_reprs(exc)}")


def shorten(text, limit=MAX_TEXT):
    """At most ``limit`` characters, cut between words and marked with an ellipsis."""
    text = str(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2:] else cut) + "…"


CELL_LINES = 8  # the innermost lines of the notebook's cells a fact keeps


def where_raised(exc):
    """The lines of the notebook's cells on the way to the error, innermost last (at most
    ``CELL_LINES``; a line whose source is lost is empty), and who raised: ``student``
    (a cell is on the way), ``probe`` (the grader's own probe code, with no cell on the
    way) or ``library``.  Which of them is the student's own the grader decides: the
    innermost may be code the notebook gives (``grader.pipeline.judge.items.own_line``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    cells = [(f.line or "").strip() for f in frames if CELL_FILE.search(f.filename or "")]
    if cells:
        lines = ["" if line.startswith("Could not get source") else shorten(line) for line in cells]
        return lines[-CELL_LINES:], "student"
    inner = frames[-1].filename if frames else ""
    return [], "probe" if inner == PROBE_FILE else "library"


def raising_function(exc):
    """The notebook's function the exception left last (``TinyLM.__init__``), or ``""``:
    a stub's, whose hint the grader then names by it, not by what the raise says."""
    names = [frame.f_code.co_qualname for frame, _ in traceback.walk_tb(exc.__traceback__)
             if CELL_FILE.search(frame.f_code.co_filename or "")]
    return names[-1] if names else ""


def error_fact(exc):
    lines, origin = where_raised(exc)
    message = shorten(without_reprs(exc))
    return {"error": {"type": type(exc).__name__, "message": message, "line": lines[-1] if lines else "",
                      "lines": lines, "origin": origin, "function": raising_function(exc)}}


def run_case(probe, namespace, args):
    """Run one probe on one case; the result is ``{"value": ...}`` or ``{"error": ...}``."""
    try:
        return {"value": encode(probe(namespace, **args))}
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit from a student's function is a finding too
        return error_fact(exc)


def run_items(items, probes, namespace, emit):
    """Run every case of every item and hand each item's facts to ``emit``.

    ``items`` is a list of ``{"name", "probe", "cases": [{"label", "args"}]}``, with
    the arguments already decoded.  ``probes`` maps probe names to functions.
    """
    for item in items:
        probe = probes[item["probe"]]
        facts = [run_case(probe, namespace, case["args"]) for case in item["cases"]]
        emit(item["name"], facts)


def decode_items(items):
    return [{**item, "cases": [{**c, "args": decode(c["args"])} for c in item["cases"]]} for item in items]


def spec_runner(spec_path, probes, namespace):
    """Kernel entry point: read a spec; return a function that runs its item number
    ``index`` and returns the item's facts as JSON text.  The worker asks for each item
    in turn and reads the text from the kernel's reply (``grader.pipeline.supervise.worker``), a channel
    nothing the kernel starts can write to."""
    with _open(spec_path, encoding="utf-8") as f:
        spec = _load(f)
    items = decode_items(spec["items"])

    def run(index):
        found = []
        run_items(items[index:index + 1], probes, namespace, lambda name, facts: found.append(_dumps(facts)))
        return found[0]
    return run


# ---------------------------------------------------------------- shared probes

MAX_RAW = 1 << 22  # elements of a parameter sent as it is (the largest case has 131,072)


def raw_values(array):
    """A parameter's values as they are, for the grader to take statistics of (a
    statistic computed here could come from a patched ``numpy``); None when huge."""
    arr = np.asarray(array)
    return arr if arr.size <= MAX_RAW else None


def lookup(namespace, name):
    """The student's object called ``name``, or the NameError Python would raise, with
    the notebook's closest name when one is close (a typo)."""
    if name not in namespace:
        close = difflib.get_close_matches(name, [k for k in namespace if isinstance(k, str) and k[:1] != "_"], 1, 0.8)
        typo = f"; did you mean '{close[0]}'?" if close else ""
        raise NameError(f"name '{name}' is not defined in the notebook{typo}")
    return namespace[name]


def call(namespace, fn, args):
    """Call the student's function ``fn`` with positional ``args``."""
    return lookup(namespace, fn)(*args)


@contextlib.contextmanager
def standing_in(namespace, stand_ins):
    """The grader's version of each of ``stand_ins`` (a name → an object) in place of the
    notebook's while the block runs, the notebook's put back after: an item whose code
    calls another exercise's is judged on its own code, not on that exercise's mistake
    (which its own items report)."""
    missing = object()
    saved = {name: namespace.get(name, missing) for name in stand_ins}
    namespace.update(stand_ins)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value


def code_facts(namespace, name, skip=(), limit=12):
    """The source of the student's function ``name`` and of the notebook's functions it
    uses (not those in ``skip``), each with what its global names are bound to, raw:
    ``{function: {"source": text or None, "globals": {name: {"type", "module", "name"}}}}``.
    The grader parses them (``grader/chapters/source_checks.py``)."""
    import inspect
    import types

    def code_names(code):
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= code_names(const)
        return names

    def describe(value):
        try:  # a student's object may answer getattr with anything, or raise
            return {"type": type(value).__name__,
                    "module": str(getattr(value, "__module__", None) or getattr(value, "__name__", "")),
                    "name": str(getattr(value, "__name__", ""))}
        except Exception:
            return {"type": type(value).__name__, "module": "", "name": ""}

    root = namespace.get(name)
    found, todo = {}, [name]
    while todo and len(found) < limit:
        key = todo.pop(0)
        fn = namespace.get(key)
        if not isinstance(fn, types.FunctionType) or key in found:
            continue
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = None
        bound = {g: fn.__globals__[g] for g in sorted(code_names(fn.__code__)) if g in fn.__globals__}
        found[key] = {"source": source, "globals": {g: describe(v) for g, v in bound.items()}}
        todo += [g for g, v in bound.items() if g not in skip and isinstance(v, types.FunctionType)
                 and v.__globals__ is root.__globals__]
    return found


def typed_call(namespace, fn, args):
    """``call``, with the name of the result's own type: a tuple of arrays is sent as
    a list like any other, and only its type says it was not one array."""
    result = call(namespace, fn, args)
    return {"type": type(result).__name__, "out": result}


def typed_call_standing_in(namespace, fn, args, stand_ins):
    """``typed_call`` with the book's ``stand_ins`` (a name → an object) in place of the
    notebook's (``standing_in``): a function that builds on another exercise is judged
    on its own code, and a mistake in that exercise is its own items' to report."""
    with standing_in(namespace, stand_ins):
        return typed_call(namespace, fn, args)


PROBES = {"call": call, "typed_call": typed_call}
