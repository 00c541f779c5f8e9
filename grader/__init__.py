"""Tied's grader: ``grader check``, ``grader grade``, ``grader release``, and ``check()``."""


def check(target=None, lang=None, namespace=None, timeout=None):
    """Run a chapter's checks inside the notebook: ``check()`` (this notebook's chapter),
    ``check("01_linen")`` or ``check(fn)``;
    ``lang`` is "en", "es" or "ko", ``timeout`` the seconds each item may take (60)."""
    import inspect

    from grader.selfcheck.check import DEFAULT_TIMEOUT
    from grader.selfcheck.check import check as _check

    if namespace is None:
        namespace = inspect.currentframe().f_back.f_globals
    return _check(target, lang, namespace, DEFAULT_TIMEOUT if timeout is None else timeout)


__all__ = ["check"]
