"""Sphinx extension: the bibliography as the text cites it, "Press and Wolf, 2017".

The chapters cite author-year (``bibtex_reference_style: author_year``), so the list on the
bibliography page carries the same names instead of [1]..[17], in the order of the names as
printed: pybtex's sorting keeps the braces of a corporate author (``{{Gemma Team}}``), and
"{gemma team}" would sort after "zaremba". The style is registered as ``author_year`` for
``bibtex_default_style`` in _config.yml.
"""
from __future__ import annotations

from string import ascii_lowercase

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitle
from sphinx.application import Sphinx


def last_names(person) -> str:
    return " ".join(person.prelast_names + person.last_names).replace("{", "").replace("}", "")


def cited_as(entry) -> str:
    # The names as the author_year citations print them: one, two, or the first et al.
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [last_names(person) for person in persons]
    if len(names) > 2:
        names = [f"{names[0]} et al."]
    return f"{' and '.join(names)}, {entry.fields.get('year', '')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        labels = [cited_as(entry) for entry in entries]
        # Two papers with one label (same authors, same year) become 2019a, 2019b.
        for index, label in enumerate(labels):
            same = [i for i, other in enumerate(labels) if cited_as(entries[i]) == label]
            yield label + ascii_lowercase[same.index(index)] if len(same) > 1 else label


class UnbracedSorting(AuthorYearTitle):
    def person_key(self, person):
        return super().person_key(person).replace("{", "").replace("}", "")


class AuthorYearStyle(PlainStyle):
    default_label_style = "author_year"
    default_sorting_style = "author_year_unbraced"


def setup(app: Sphinx) -> dict:
    register_plugin("pybtex.style.labels", "author_year", AuthorYearLabels)
    register_plugin("pybtex.style.sorting", "author_year_unbraced", UnbracedSorting)
    register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
