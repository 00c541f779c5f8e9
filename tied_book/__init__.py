"""The book's own code, apart from the grader: what its pages import.

``pages`` shows an exercise's stubs and formats counts; ``savings`` counts what tying
saves in published models; ``explorer`` is the introduction's widget over those counts.
Nothing here is grading code, so editing it keeps the grader's stored references
(``grader/disk_cache.py`` hashes the grading code only).
"""
