"""Step 3: the worker and its kernel in a process group, cgroups and (optionally) a
sandbox, under the time and memory limits.
"""
