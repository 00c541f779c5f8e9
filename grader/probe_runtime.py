"""Kernel-side half of the grader: call the student's code and record raw facts.

This module is self-contained (standard library and NumPy only). The grader sends
its source into the student's kernel as text, so that nothing the student imports,
patches or replaces in ``sys.modules`` changes the code that runs here.  It never
compares anything: it only records what the student's code returned or raised.
All judging happens in the grader's own process (see ``grader.judge``).

The same functions run in-process for the in-notebook ``check()``.
"""
import base64
import io
import json
import traceback

import numpy as np

MAX_TEXT = 300  # characters of an error message kept in a fact


def encode(obj):
    """JSON-able form of nested dicts/lists/tuples holding arrays and scalars."""
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    arr = np.asarray(obj)
    if arr.dtype == object:
        raise TypeError(f"cannot encode a value of type {type(obj).__name__}")
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return {"__nd__": base64.b64encode(buf.getvalue()).decode("ascii")}


def decode(obj):
    """Inverse of ``encode``; arrays come back as NumPy arrays, never pickles."""
    if isinstance(obj, dict):
        if set(obj) == {"__nd__"}:
            return np.load(io.BytesIO(base64.b64decode(obj["__nd__"])), allow_pickle=False)
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def _student_line(exc):
    """The last line of the traceback that lies in a notebook cell, if any."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        name = frame.filename or ""
        if "ipykernel" in name or name.startswith("<ipython-input") or name.startswith("<cell"):
            return (frame.line or "").strip()[:MAX_TEXT]
    return ""


def error_fact(exc):
    return {
        "error": {
            "type": type(exc).__name__,
            "message": str(exc)[:MAX_TEXT],
            "line": _student_line(exc),
        }
    }


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


def run_spec_file(spec_path, probes, namespace):
    """Kernel entry point: read a spec, append one JSON line per item to its output."""
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    items = decode_items(spec["items"])
    with open(spec["out"], "a", encoding="utf-8") as out:
        def emit(name, facts):
            out.write(json.dumps({"item": name, "facts": facts}) + "\n")
            out.flush()
        run_items(items, probes, namespace, emit)


# ---------------------------------------------------------------- shared probes

def lookup(namespace, name):
    """The student's object called ``name``, or the NameError Python would raise."""
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined in the notebook")
    return namespace[name]


def call(namespace, fn, args):
    """Call the student's function ``fn`` with positional ``args``."""
    return lookup(namespace, fn)(*args)


PROBES = {"call": call}
