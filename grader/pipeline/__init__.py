"""Grading one notebook, in the grader's process: ``runner`` runs the steps in order
(load: ``submission``; prepare; supervise; collect: ``runner.collect``; judge).
"""
