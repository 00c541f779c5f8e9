"""What the grader keeps from one case to the next and from one run to the next: each
item's cases and references, and compiled programs.

**Cases and references.** ``cases`` builds an item's cases once per process;
``references`` computes their reference values once per process and keeps them on disk.
Computing a chapter's references means importing its framework and running the reference
implementation on every public and hidden case: about 3.6 s for chapter 01, as much as
running the student's notebook. The values depend only on the grading code (the
chapters, the cases, the encoding) and on the versions of the libraries, so the first
run stores them in a folder named by a hash of both, and later runs (``grader check``
again, each notebook of a batch, the in-notebook ``check()``) read them back; folders of
older fingerprints are removed when a new one is made. The files hold values in the
encoding the kernel uses for its facts (arrays as .npy bytes, never pickles): a damaged
file fails to decode, and then the references are computed again. A well-formed edit is
used as it is: a notebook graded without ``--sandbox`` runs with the user's permissions
and can write here, so an untrusted class is graded with ``--sandbox``, where the
kernels cannot see this folder.

**Compiled programs.** Each submission's kernel is a fresh process, and JAX would
compile the same small programs in every one of them.  The kernels are pointed at a
JAX compilation cache in the same folder, so a notebook graded before (or a
classmate's with the same code) skips most of its compilation.

Set ``TIED_CACHE_DIR`` to move the folder, or to an empty string to keep nothing on
disk (the kernels of one batch then share a temporary compilation cache).
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
from contextlib import contextmanager
from functools import cache, wraps
from importlib import metadata
from pathlib import Path

from grader.atomic import write_atomic
from grader.chapters import chapter
from grader.drawing import secret_id
from grader.kernel.runtime import CACHE_WARNINGS, decode, encode
from grader.registry import Case, Chapter

LIBRARIES = ("numpy", "jax", "jaxlib", "flax", "torch")


def folder() -> Path | None:
    """Where the cache is kept, or None when the user turned it off."""
    configured = os.environ.get("TIED_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tied"


# What a reference value depends on, in this package: editing the CLI, the reports, the
# platforms' formats or the book's helpers (``tied_book``, outside the grader) keeps the
# stored references.
GRADING_CODE = (
    "chapters/**/*.py", "drawing.py", "numerics.py", "registry.py", "kernel/runtime.py", "pipeline/judge/items.py",
    "comparisons.py", "disk_cache.py",
)


def grading_code(package: Path = Path(__file__).parent) -> list[Path]:
    """The files of ``package`` a reference value depends on, in a fixed order."""
    return sorted({p for pattern in GRADING_CODE for p in package.glob(pattern)})


def hash_code(digest, package: Path = Path(__file__).parent) -> None:
    for path in grading_code(package):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())


@cache
def fingerprint() -> str:
    """Hash of everything a reference value depends on: the grading code and the libraries."""
    digest = hashlib.sha256()
    hash_code(digest)
    for name in LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}=={version};".encode())
    digest.update(f"{sys.version};{platform.machine()}".encode())
    return digest.hexdigest()[:20]


def _part(kind: str) -> Path | None:
    """This grader's folder for one kind of content (``references``, ``jax``), if any.
    References also depend on the teacher's secret, which seeds the hidden cases."""
    root = folder()
    if root is None:
        return None
    secret = secret_id() if kind == "references" else ""
    part = root / kind / (fingerprint() + (f"-{secret}" if secret else ""))
    if part.is_dir():
        in_use(part)
    else:
        prune(root / kind)
    return part


# A folder of another fingerprint is removed once no grader has used it for this long: two
# clones, two versions side by side, or a `git pull` while a kernel runs each keep their own
# (removing one a kernel writes to filled the student's cell with JAX's write warnings).
UNUSED_FOR = 14 * 24 * 3600.0  # seconds


def in_use(part: Path) -> None:
    """Mark ``part`` as used now (its modification time), so that no other version prunes it."""
    try:
        os.utime(part)
    except OSError:
        pass


def prune(kind_folder: Path) -> None:
    """Remove the folders of other fingerprints (an older grader or library version) that
    no grader has used for ``UNUSED_FOR``: a version still in use keeps its folder.  A
    folder that resists is left."""
    if not kind_folder.is_dir():
        return
    now = time.time()
    for old in kind_folder.iterdir():
        try:
            unused = now - old.stat().st_mtime > UNUSED_FOR
        except OSError:
            continue
        if old.is_dir() and not old.name.startswith(fingerprint()) and unused:
            shutil.rmtree(old, ignore_errors=True)


@contextmanager
def compiled_programs():
    """The folder for the kernels' JAX compilation cache, for as long as they run."""
    part = _part("jax")
    if part is not None:
        yield str(part)
        return
    with tempfile.TemporaryDirectory(prefix="tied-jax-cache-") as tmp:
        yield tmp


# The settings the kernels get from ``grader.pipeline.supervise.supervisor.jax_cache_env``: every program is kept.
KEEP_EVERY_PROGRAM = {"jax_persistent_cache_min_compile_time_secs": 0,
                      "jax_persistent_cache_min_entry_size_bytes": -1}


@contextmanager
def compiled_programs_in_process():
    """While the in-notebook ``check()`` runs, JAX in this process keeps and finds its
    compiled programs in the same folder as the kernels of ``grader check``.

    A notebook function that builds and jits a new function on each call (chapter 02's
    ``tied_grad_paths`` jits a fresh ``nnx.grad``) is compiled again on every call, since
    JAX's in-memory caches are keyed by the Python function; the compilation cache is
    keyed by the program itself (with the compiler options and versions), so the same
    program compiles once and a changed one compiles anew.  Nothing changes when JAX is
    not loaded (a NumPy chapter), when the notebook set up a cache of its own, or when
    ``TIED_CACHE_DIR`` is empty; afterwards the notebook's settings are back as they were.
    """
    with warnings.catch_warnings():
        # A cache entry that cannot be read or written only costs a compilation: the
        # student did nothing to cause it, and their cell shows none of it.
        for message in CACHE_WARNINGS:
            warnings.filterwarnings("ignore", message=re.escape(message))
        with _cache_in_process():
            yield


@contextmanager
def _cache_in_process():
    jax = sys.modules.get("jax")
    leave_alone = jax is None or jax.config.jax_compilation_cache_dir or "JAX_COMPILATION_CACHE_DIR" in os.environ
    part = None if leave_alone else _part("jax")
    try:
        if part is not None:
            part.mkdir(parents=True, exist_ok=True)
    except OSError:  # a home folder the notebook cannot write: compile as before
        part = None
    if part is None:
        yield
        return
    from jax.experimental.compilation_cache.compilation_cache import reset_cache

    settings = {"jax_compilation_cache_dir": str(part), **KEEP_EVERY_PROGRAM}
    before = {name: getattr(jax.config, name) for name in settings}
    for name, value in settings.items():
        jax.config.update(name, value)
    reset_cache()  # JAX decides once whether a cache is used: again, now that there is one
    try:
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
        reset_cache()


def _file(chapter_id: str, item_name: str) -> Path | None:
    part = _part("references")
    return None if part is None else part / f"{chapter_id}.{item_name}.json"


def load(chapter_id: str, item_name: str, count: int) -> tuple | None:
    """The ``count`` stored references of an item, or None when there is no usable file."""
    path = _file(chapter_id, item_name)
    if path is None:
        return None
    try:
        values = tuple(decode(v) for v in json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return values if len(values) == count else None


def store(chapter_id: str, item_name: str, encoded: list) -> None:
    """Keep an item's encoded references; a folder that cannot be written is no error."""
    path = _file(chapter_id, item_name)
    if path is None:
        return
    try:
        write_atomic(path, json.dumps(encoded))
    except OSError:
        pass


# ---------------------------------------------------------------- an item's cases and references

def once_per_item(build):
    """``build(chapter_id, item_name)`` run once per item and process, whatever the threads:
    a batch grades several notebooks of a chapter in threads of one process, and each
    warms the references while its kernel runs.  Two threads asking for the same item
    get the same object; the second waits for the first."""
    done: dict[tuple[str, str], object] = {}
    locks: dict[tuple[str, str], threading.Lock] = {}
    guard = threading.Lock()

    @wraps(build)
    def get(chapter_id: str, item_name: str):
        key = (chapter_id, item_name)
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock:
            if key not in done:
                done[key] = build(chapter_id, item_name)
            return done[key]

    get.cache_clear = lambda: (done.clear(), locks.clear())  # type: ignore[attr-defined]
    return get


@once_per_item
def cases(chapter_id: str, item_name: str) -> tuple[Case, ...]:
    """An item's cases, built once per process (hidden ones depend on the secret in use)."""
    return tuple(chapter(chapter_id).item(item_name).drawn_cases())


@once_per_item
def references(chapter_id: str, item_name: str) -> tuple:
    """Reference values for every case of an item: from the disk, else computed and stored.

    They pass through the same encoding as the student's facts, so a judge sees both
    sides in one form, whether the references were computed now or read back.
    """
    item_cases = cases(chapter_id, item_name)
    stored = load(chapter_id, item_name, len(item_cases))
    if stored is not None:
        return stored
    item = chapter(chapter_id).item(item_name)
    encoded = [encode(item.reference(case)) for case in item_cases]
    store(chapter_id, item_name, encoded)
    return tuple(decode(value) for value in encoded)


def warm_references(ch: Chapter) -> None:
    """Every item's references, ready before the judging asks for them."""
    for item in ch.items:
        references(ch.id, item.name)
