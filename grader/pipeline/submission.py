"""Reading a submission: every way a file can be unusable becomes one message key."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.chapters import chapters


class BadSubmission(Exception):
    """A file that cannot be graded; ``key`` names the catalog message."""

    def __init__(self, key: str, **params):
        super().__init__(key)
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Submission:
    path: Path
    data: bytes  # the file's exact bytes: the grader never writes them back
    chapter: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


MAX_BYTES = 16 * 2**20  # a solved exercise notebook is about 40 KB


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes.

    The file is opened without following a symbolic link (one could point at
    /dev/zero, at a FIFO or at someone else's file) and without blocking (opening a
    FIFO for reading waits for a writer).  The size is checked before reading, and at
    most ``limit + 1`` bytes are read, in case the file grows meanwhile.
    """
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BadSubmission("bad.missing", path=name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadSubmission("bad.symlink", path=name)
        raise BadSubmission("bad.unreadable", path=name, reason=exc.strerror or str(exc))
    too_large = BadSubmission("bad.too_large", path=name, mib=f"{limit / 2**20:g}")
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise BadSubmission("bad.directory", path=name)
        if not stat.S_ISREG(info.st_mode):
            raise BadSubmission("bad.special_file", path=name)
        if info.st_size > limit:
            raise too_large
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise BadSubmission("bad.unreadable", path=name, reason=exc.strerror or str(exc))
    finally:
        os.close(fd)
    if len(data) > limit:
        raise too_large
    return data


def read_bytes(path: Path) -> bytes:
    """A submission's bytes: a regular file of at most ``MAX_BYTES``, else BadSubmission."""
    return read_regular(path, MAX_BYTES)


def parse(path: Path, data: bytes, expected_chapter: str | None = None) -> Submission:
    """Check the bytes are a current notebook of a known chapter, or raise BadSubmission."""
    name = str(path)
    if not data.strip():
        raise BadSubmission("bad.empty", path=name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadSubmission("bad.encoding", path=name, offset=exc.start)
    try:
        nb = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        if path.suffix.lower() != ".ipynb":  # a .py file, say: not a damaged notebook
            raise BadSubmission("bad.not_ipynb", path=name)
        # json_line, not line: "line" names a student's line of code
        raise BadSubmission("bad.json", path=name, json_line=getattr(exc, "lineno", "?"))
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise BadSubmission("bad.not_notebook", path=name)
    if nb.get("nbformat") != 4:
        raise BadSubmission("bad.nbformat", path=name, version=nb.get("nbformat", "?"))
    metadata: dict = nb["metadata"] if isinstance(nb.get("metadata"), dict) else {}
    if not isinstance(metadata.get("kernelspec"), dict) or not metadata["kernelspec"].get("name"):
        raise BadSubmission("bad.kernelspec", path=name)
    tied: dict = metadata["tied"] if isinstance(metadata.get("tied"), dict) else {}
    chapter = tied.get("chapter")
    known = chapters()
    if chapter not in known:
        raise BadSubmission("bad.not_tied", path=name)
    if expected_chapter and chapter != expected_chapter:
        raise BadSubmission("bad.other_chapter", path=name, chapter=chapter, expected=expected_chapter)
    if path.stem in known and path.stem != chapter:
        raise BadSubmission("bad.other_chapter", path=name, chapter=chapter, expected=path.stem)
    _validate_cells(nb["cells"], name)
    return Submission(path, data, chapter)


def _validate_cells(cells: list, name: str) -> None:
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise BadSubmission("bad.not_notebook", path=name)
        source = cell.get("source", "")
        if not isinstance(source, (str, list)):
            raise BadSubmission("bad.not_notebook", path=name)


def load(path: Path, expected_chapter: str | None = None) -> Submission:
    return parse(path, read_bytes(path), expected_chapter)
