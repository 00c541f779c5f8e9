"""Chapter pytorch: ``grade.py`` runs in the grader's process, ``probe.py`` in the student's kernel.

``grade.py`` imports the rest of the grader's side: ``cases.py`` (the cases) and
``identities.py`` (what the identities the kernel sent say about a tie).
"""
