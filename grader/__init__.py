"""Tied's grader: ``grader check``, ``grader grade``, ``grader release``, and ``check()``."""


def check(target, lang=None, namespace=None):
    """Run a chapter's checks inside the notebook: ``check("01_linen")`` or ``check(fn)``."""
    import inspect

    from .selfcheck import check as _check

    if namespace is None:
        namespace = inspect.currentframe().f_back.f_globals
    return _check(target, lang, namespace)


__all__ = ["check"]
