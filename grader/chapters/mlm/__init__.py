"""Chapter mlm: ``grade.py`` runs in the grader's process, ``probe.py`` in the student's kernel.

``grade.py`` imports the rest of the grader's side: ``reference.py`` (the float64
references), ``cases.py`` (the cases) and ``code_rules.py`` (what the code may not do).
"""
