"""One module per chapter, each declaring ``CHAPTER`` (see ``grader.registry``).

``<name>.py`` runs in the grader's process (cases, references, judges);
``<name>_probe.py`` is sent as source into the student's kernel and only
gathers facts.  A module without ``CHAPTER`` holds what several chapters share
(``tied_matrix``: chapters 01 and 02).
"""
