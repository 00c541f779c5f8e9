"""Making the exercises from the solutions (``grader release``) and keeping notebooks
free of volatile metadata.
"""
