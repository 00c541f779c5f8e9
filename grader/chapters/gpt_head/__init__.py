"""Chapter gpt_head: ``grade.py`` runs in the grader's process, ``probe.py`` in the student's kernel.

``grade.py`` imports the rest of the grader's side: ``reference.py`` (the float64
references, from PyTorch) and ``cases.py`` (the cases).
"""
