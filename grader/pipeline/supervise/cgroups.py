"""A memory and a pids cgroup for each job, where the machine lets the grader make them.

Every process a notebook starts lands in its job's cgroups, and none can leave them: a
``setsid`` or double-forked child, or memory held in a ``memfd`` or in ``/dev/shm``,
still counts against ``--memory``, and when the job ends ``close`` kills everything in
them.  The grader makes them with or without ``--sandbox``, where cgroup v1
controllers are writable by its user (as for root, or under a delegated hierarchy).
Where they are not (cgroup v2 is not handled yet), ``missing()`` names the
controllers lost and the grader says on stderr what is not counted
(``NOT_COUNTED``): the supervisor's polling of the process tree, which finds the
orphans the worker reaps (``grader.pipeline.supervise.worker``), remains.
"""
from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_PROCESSES = 256  # threads count too: a JAX kernel runs about 60
# The message (``grader/messages``) that says what a missing controller leaves uncounted.
NOT_COUNTED = {"memory": "common.no_memory_cgroup", "pids": "common.no_pids_cgroup"}


class JobCgroups:
    """One job's cgroups (those that could be made), from creation to the last kill."""

    def __init__(self, memory: int):
        self.memory = memory
        self.name = f"tied-{uuid.uuid4().hex[:12]}"
        self.groups: dict[str, Path] = {}
        for controller, settings in (("memory", {"memory.limit_in_bytes": memory}),
                                     ("pids", {"pids.max": MAX_PROCESSES})):
            group = CGROUP_ROOT / controller / self.name
            try:
                group.mkdir()
                for name, value in settings.items():
                    (group / name).write_text(str(value))
            except OSError:
                if group.is_dir():
                    group.rmdir()
                continue
            self.groups[controller] = group
        swap = self.groups.get("memory")
        if swap is not None and (swap / "memory.memsw.limit_in_bytes").exists():
            try:  # memory and swap together, where swap accounting is on
                (swap / "memory.memsw.limit_in_bytes").write_text(str(memory))
            except OSError:
                pass

    def missing(self) -> list[str]:
        """The controllers that could not be had here, in ``NOT_COUNTED``'s order."""
        return [c for c in NOT_COUNTED if c not in self.groups]

    def enter(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the cgroups: a shell enters them and then becomes the
        command, so that nothing it starts escapes them (no Python runs between fork and
        exec: the grader's process has threads)."""
        if not self.groups:
            return argv
        enter = "; ".join(f'echo $$ > "{group}/cgroup.procs"' for group in self.groups.values())
        return ["/bin/sh", "-c", f'{enter} && exec "$@"', "sh", *argv]

    def give_to(self, uid: int) -> None:
        """Let a process of user ``uid`` enter the cgroups itself (``enter``'s shell
        runs as that user when the worker does)."""
        for group in self.groups.values():
            os.chown(group / "cgroup.procs", uid, -1)

    def hit_memory_limit(self) -> bool:
        """Whether the job reached its memory limit: the kernel's OOM killer struck in its
        cgroup.  Its peak usage counts the page cache too (a notebook that reads a large
        file fills it, and the kernel gives it back), so the peak decides only where the
        kernel does not count its OOM kills (before Linux 4.13)."""
        group = self.groups.get("memory")
        if group is None:
            return False
        try:
            control = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
            if "oom_kill" in control:
                return int(control["oom_kill"]) > 0 or control.get("under_oom") == "1"
            return int((group / "memory.max_usage_in_bytes").read_text()) >= self.memory
        except (OSError, ValueError):
            return False

    def kill_all(self, deadline: float = 5.0) -> None:
        """Kill every process of the job, wherever it went, and wait until the cgroups
        are empty (a process forking while it is killed is seen on the next pass)."""
        end = time.monotonic() + deadline
        for group in self.groups.values():
            while time.monotonic() < end:
                pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.01)  # a killed process leaves its cgroup a moment later

    def close(self) -> None:
        self.kill_all()
        for group in self.groups.values():
            try:
                group.rmdir()
            except OSError:
                pass
