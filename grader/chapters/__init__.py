"""One module per chapter, each declaring ``CHAPTER`` (see ``grader.registry``).

``<name>/grade.py`` runs in the grader's process (cases, references, judges);
``<name>/probe.py`` is sent as source into the student's kernel and only
gathers facts.  A chapter's folder may hold more of its grader side, each module one
kind of thing (``mlm/reference.py``, ``mlm/cases.py``), which its ``grade.py`` imports.
A module at the top, without ``CHAPTER``, holds what chapters share (``tied_matrix``:
chapters 01 and 02; ``source_checks``) or a rule any chapter may adopt (``plain_numpy``).
"""
