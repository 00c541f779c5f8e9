"""Listing and killing a process tree, none escaping.

The supervisor kills a worker's whole tree when the job ends; the worker, a child
subreaper (``grader.pipeline.supervise.worker``), kills what its kernel left behind before it exits.
"""
from __future__ import annotations

import time
from collections.abc import Iterable

import psutil


def tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc] + proc.children(recursive=True)
    except psutil.Error:
        return []


def kill_tree(root: psutil.Process, known: Iterable[psutil.Process] = ()) -> None:
    """Kill ``root``, every process under it and those in ``known``, none escaping."""
    _stop_and_kill(lambda: tree(root) + list(known))


def kill_descendants(root: psutil.Process) -> None:
    """Kill every process under ``root`` (the worker's own end: ``root`` lives on)."""
    _stop_and_kill(lambda: tree(root)[1:])


def _stop_and_kill(listing) -> None:
    """Each process ``listing()`` gives is stopped (SIGSTOP) before it is called again,
    and a stopped process cannot start another: once a listing finds nothing new,
    killing them all leaves nothing behind, not even a kernel that was being started."""
    seen: dict[int, psutil.Process] = {}
    while fresh := [p for p in listing() if p.pid not in seen]:
        for p in fresh:
            seen[p.pid] = p
            try:
                p.suspend()
            except psutil.Error:
                pass
    for p in seen.values():
        try:
            p.kill()
        except psutil.Error:
            pass
    # Wait until each has ended (a zombie has: only its parent's wait remains);
    # psutil.wait_procs would wait for init to reap the kernel, up to its timeout.
    deadline = time.monotonic() + 1.0
    while not all(map(_ended, seen.values())) and time.monotonic() < deadline:
        time.sleep(0.01)


def _ended(p: psutil.Process) -> bool:
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
