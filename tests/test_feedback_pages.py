"""Feedback pages: each message in the page's language, rendered from its key, and a
link to the book only to an address the teacher gives, named by the chapter's title."""
from pathlib import Path

from grader.feedback import student_page
from grader.outcome import FAIL, Finding, Verdict
from grader.report import as_dict
from grader.result import Result

CHAPTER = "04_gpt_head"


def entry(lang: str) -> dict:
    """A graded entry as the gradebook keeps it, written in ``lang``."""
    finding = Finding("common.wrong_shape", {"got": "(3, 5)", "expected": "(3, 4)"})
    verdict = Verdict("lm_head", 0, 2, FAIL, finding)
    result = Result(Path("bo") / f"{CHAPTER}.ipynb", chapter=CHAPTER, verdicts=[verdict])
    return {"student": "bo", **as_dict(result, lang)}


def test_messages_are_in_the_pages_language():
    page = student_page("bo", [entry("en")], "es", book="")
    assert "Forma incorrecta" in page and "Wrong shape" not in page


def test_a_link_only_to_the_book_the_teacher_names_with_the_chapters_title():
    assert "<a href" not in student_page("bo", [entry("en")], "en", book="")
    page = student_page("bo", [entry("en")], "en", book="https://example.org/tied/")
    assert "href='https://example.org/tied/book/04_gpt_head.html'" in page
    assert "“The LM head in NumPy”" in page
