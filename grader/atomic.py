"""Writing a file so that a reader never sees half of it: temporary file, then rename."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The process's umask, read once at import (setting it is not thread-safe): files are
# created with the mode an ordinary open() would give them, not mkstemp's 0600.
UMASK = os.umask(0o022)
os.umask(UMASK)


def write_atomic(path: Path, content: str | bytes, private: bool = False) -> None:
    """Write text (UTF-8) or bytes to a temporary file beside ``path``, then rename it
    into place; readable as the umask allows (usually 644), or by the owner alone
    when ``private`` (a file that holds a secret)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600 if private else 0o666 & ~UMASK)
        with os.fdopen(fd, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
