"""Chapter frameworks: ``grade.py`` runs in the grader's process, ``probe.py`` in the student's kernel.
"""
