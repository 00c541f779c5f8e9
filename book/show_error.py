"""``with show_error(): ...`` runs a line that must fail and prints the exception's type and
the first line of its message: what a reader needs, without the traceback's library frames
and the paths of the machine that built the book. The build fails if nothing is raised."""
from __future__ import annotations

import contextlib
import re
import textwrap

# A link at the end of a message, with the words that point to it ("More information
# at", "see"): longer than the code box, and the page cites the library's documentation
# itself.
TRAILING_LINK = re.compile(
    r"\s*(?:(?:for\s+)?more\s+info(?:rmation)?[,:]?\s*(?:(?:is\s+)?(?:at|in|see)\s*:?)?"
    r"|see\s*:?)?\s*\(?https?://\S+\)?[.\s]*$",
    re.IGNORECASE,
)


def describe(error: BaseException, whole: bool = False) -> str:
    """``Type: message`` (its first line, or all of it joined) within 80 columns."""
    lines = str(error).strip().splitlines() or [""]
    message = " ".join(" ".join(lines).split()) if whole else lines[0]
    text = f"{type(error).__name__}: {TRAILING_LINK.sub('', message)}"
    return textwrap.fill(text, 80, subsequent_indent="  ", break_on_hyphens=False)


@contextlib.contextmanager
def show_error():
    try:
        yield
    except Exception as error:   # noqa: BLE001 - any exception is the point of the example
        print(describe(error))
    else:
        raise AssertionError("the example was meant to raise an exception, and did not")
