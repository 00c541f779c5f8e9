"""Grading notebooks, in the grader's process: ``runner`` runs the steps in order
(load: ``submission``; prepare; supervise; collect: ``runner.collect``; judge), and
``batch`` grades many at once (``grader grade``) or one on a platform.
"""
