"""``check()`` inside the student's notebook: the same probes and judges, in process,
and the panel that shows the result.
"""
