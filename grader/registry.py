"""The registry: every chapter and every graded item, declared in one place.

A chapter module (``grader/chapters/<name>/grade.py``) declares a ``Chapter`` whose items
say which probe runs in the student's kernel, on which cases, against which
reference, and how a wrong answer is recognised.  It reads top to bottom: what its
items share, then one block per exercise in the notebook's order (cases, reference,
symptoms, judge), ending with that exercise's ``Item`` and its promises; the
``Chapter`` at the bottom lists the items.  Adding an exercise is adding one block;
adding a chapter is adding its module to ``grader/chapters/``, where ``grader.chapters``
finds it: this module holds the types only, and imports no chapter.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # what a judge returns, for the annotation only: import it from grader.outcome
    from grader.outcome import Finding

# Who sees what of a case, with Gradescope's words: "visible" (a worked example, in the
# notebook), "hidden" (its inputs never shown; a failure names its sizes and the mistake),
# "after_due_date" (hidden, and on Gradescope even the mistake waits for the due date).
VISIBILITIES = ("visible", "hidden", "after_due_date")


@dataclass(frozen=True)
class Case:
    """One input on which an item is checked.  Public cases appear in the notebook.

    ``label`` is a catalog key (``case.worked_example``, ``case.hidden``, or a chapter's
    own ``<chapter>.case_*``) and ``shown`` fills its placeholders: the sizes, so that a
    student whose hidden case fails can build a similar public one, never the inputs.
    ``visibility`` is one of ``VISIBILITIES``: "visible" for a public case, "hidden" for
    the others unless the chapter says "after_due_date".
    """

    label: str
    args: dict
    public: bool = False
    shown: dict = field(default_factory=dict)
    visibility: str = ""

    def __post_init__(self):
        visibility = self.visibility or ("visible" if self.public else "hidden")
        if visibility not in VISIBILITIES or (visibility == "visible") != self.public:
            raise ValueError(f"case {self.label}: visibility {visibility!r} with public={self.public}")
        object.__setattr__(self, "visibility", visibility)


@dataclass(frozen=True)
class ErrorPattern:
    """An exception the student's code raised that has a known meaning."""

    key: str
    type: str  # regular expression on the exception's type name
    message: str = ""  # regular expression searched in its message
    # Where the meaning depends on the case too: ``fits(case, groups)`` with the message's
    # named groups; a pattern with one matches only where the case is known and it holds.
    fits: Callable[[Case, dict], bool] | None = None

    def matches(self, error: dict, case: Case | None = None) -> bool:
        if not (re.fullmatch(self.type, error["type"])
                and re.search(self.message, error["message"], re.IGNORECASE)):
            return False
        return self.fits is None or (case is not None and self.fits(case, self.named(error)))

    def named(self, error: dict) -> dict:
        """What the message's named groups caught (a parameter's name, for the catalog
        message to say in the exercise's terms rather than quote the library)."""
        found = re.search(self.message, error["message"], re.IGNORECASE)
        return {k: v for k, v in found.groupdict().items() if v is not None} if found else {}


@dataclass(frozen=True)
class Symptom:
    """A wrong-but-recognisable result: ``test(case, value, ref)`` is true when it shows,
    ``ref`` being the item's reference for the case (computed once, cached with the others)."""

    key: str
    test: Callable[[Case, Any, Any], bool]


Judge = Callable[[Case, Any, Any], "Finding | None"]


@dataclass(frozen=True)
class Promise:
    """One sentence of the exercise's text, and the check that holds the code to it.

    ``keys`` names the findings (catalog keys) that check gives when the code breaks the
    promise: ``tests/test_item_properties.py`` holds each to its three catalogs and to a
    pitfall that gets it, and every finding a chapter's judges can give to a promise."""

    says: str  # what the exercise promises, as the notebook states it
    enforced_by: str  # what enforces it: a case, a judge, a symptom, a source check
    keys: tuple[str, ...] = ()  # the finding keys of that check


@dataclass(frozen=True)
class Item:
    """One graded exercise (a function, a class, or one property of a class)."""

    name: str  # what the student wrote, as named in the notebook
    points: int
    probe: str  # a function of the chapter's probe module, or ``call``
    cases: Callable[[], list[Case]]
    reference: Callable[[Case], Any]  # runs in the grader's process only
    judge: Judge
    errors: tuple[ErrorPattern, ...] = ()
    symbol: str = ""  # the name looked up in the namespace; defaults to ``name``
    promises: tuple[Promise, ...] = ()  # every promise of the exercise's text, with its check
    stands_on: str = ""  # the student's name its probe replaces with the book's (a mistake there is not its own)

    def drawn_cases(self) -> list[Case]:
        """The cases ``cases`` draws, as the probe gets them: a case of positional arguments,
        ``{"args": [...]}``, is a call of the item's own function, which the item names
        (``fn``), so that no case repeats it."""
        return [replace(case, args={"fn": self.target, **case.args}) if "args" in case.args else case
                for case in self.cases()]

    @property
    def target(self) -> str:
        return self.symbol or self.name


@dataclass(frozen=True)
class Chapter:
    id: str  # e.g. "01_linen"; also the notebook's file stem
    title: str
    probe_module: str  # module whose source is sent into the kernel
    items: tuple[Item, ...]
    errors: tuple[ErrorPattern, ...] = ()  # patterns shared by all items of the chapter

    def item(self, name: str) -> Item:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(name)


def is_probe(module: str) -> bool:
    """Is ``module`` (a dotted name or a file's stem) a chapter's kernel side, a probe module?"""
    return module.rpartition(".")[2] == "probe"
