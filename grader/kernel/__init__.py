"""Runs in the student's kernel, and nothing else does: the loader that builds the
bundle's modules there and the library a probe may import.  The kernel side of the
grader is this folder and every chapter's ``probe.py``; a probe imports only
modules of this folder (``grader.pipeline.prepare.probe_bundle`` refuses others).
"""
