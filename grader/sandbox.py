"""A sandbox per submission: bubblewrap namespaces and, where the machine allows, cgroups.

``grader check --sandbox`` and ``grader grade --sandbox`` run each worker (nbval and the
student's kernel) inside ``bwrap`` with its own user, PID, mount, IPC and network
namespaces:

- the system, the Python installation and the virtualenv are read-only;
- ``/tmp`` and the home folder are private and empty;
- the only writable folder that outlives the kernel is the job's own (its notebook copy,
  the facts, the summary);
- the class folder, the user's home, the grader's disk cache, and the chapter modules
  that hold the references and build the hidden cases are not there at all; the
  chapters' probe modules (sent into the kernel anyway) and the JAX compilation cache
  (read-only, filled by the teacher's own run) are;
- there is no network, and no process outside the sandbox can be seen or signalled;
- when the worker ends, or is killed, its PID namespace ends with it: a double-forked,
  ``setsid`` or forking child is killed too.

Memory and processes are counted for everything the submission starts (``memfd``
memory and detached children included) by a memory and a pids cgroup, where this
machine lets the grader create them (cgroup v1 controllers writable by the user, as for
root).  Where it does not, ``limits_note()`` says what is not counted, and the
grader's own polling of the process tree remains.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from importlib.util import find_spec
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_PROCESSES = 256  # threads count too: a JAX kernel runs about 60
HOME = "/home/student"


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot make namespaces here; the message says what to do."""


def bwrap() -> str:
    """The bubblewrap binary, once shown to work here."""
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailable("--sandbox needs bubblewrap: install it (Debian/Ubuntu: apt-get install bubblewrap)")
    probe = subprocess.run([found, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                           capture_output=True, text=True)
    if probe.returncode:
        reason = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else f"exit {probe.returncode}"
        raise SandboxUnavailable(f"--sandbox: bubblewrap cannot create namespaces here ({reason})")
    return found


def _grader_folder() -> Path:
    spec = find_spec("grader")
    assert spec is not None and spec.origin is not None  # this very module is in it
    return Path(spec.origin).parent


def _system_binds() -> list[str]:
    """Read-only binds of the system and of this Python; symlinks such as /bin kept."""
    args = []
    for top in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/opt"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for prefix in {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}:
        args += ["--ro-bind-try", prefix, prefix]
    return args


def _grader_binds() -> list[str]:
    """The grader package read-only, its chapter modules replaced by the probes alone."""
    package = _grader_folder()
    chapters = package / "chapters"
    args = ["--ro-bind", str(package), str(package), "--tmpfs", str(chapters)]
    for path in sorted(chapters.glob("*.py")):
        if path.name == "__init__.py" or path.stem.endswith("_probe"):
            args += ["--ro-bind", str(path), str(path)]
    return args + ["--remount-ro", str(chapters)]


class Sandbox:
    """One submission's sandbox: a ``bwrap`` command line and, if possible, its cgroups."""

    def __init__(self, job_dir: Path, memory: int, env: dict[str, str]):
        self.binary = bwrap()
        self.job_dir = Path(job_dir).resolve()
        self.memory = memory
        # The kernels' JAX cache is read, never written: a kernel's program cannot reach
        # a classmate's kernel.  JAX only warns when it cannot write an entry.
        self.jax_cache = env.get("JAX_COMPILATION_CACHE_DIR", "")
        self.env = {**env, "HOME": HOME, "TMPDIR": "/tmp",
                    "PYTHONWARNINGS": "ignore:Error writing persistent compilation cache entry"}
        if not os.path.isdir(self.jax_cache):
            self.env.pop("JAX_COMPILATION_CACHE_DIR", None)
            self.jax_cache = ""
        self.name = f"tied-{uuid.uuid4().hex[:12]}"
        self.cgroups: dict[str, Path] = {}
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
            self.cgroups[controller] = group
        swap = self.cgroups.get("memory")
        if swap is not None and (swap / "memory.memsw.limit_in_bytes").exists():
            try:  # memory and swap together, where swap accounting is on
                (swap / "memory.memsw.limit_in_bytes").write_text(str(memory))
            except OSError:
                pass

    def limits_note(self) -> str:
        """What the cgroups do not count here ("" when both are in place)."""
        lost = {"memory": "memory held outside the process tree (memfd, detached children) is not counted",
                "pids": "the number of processes is not limited"}
        missing = [c for c in lost if c not in self.cgroups]
        if not missing:
            return ""
        return f"--sandbox: no {' or '.join(missing)} cgroup could be created here, so " + \
            " and ".join(lost[c] for c in missing)

    def argv(self, command: list[str], workdir: Path) -> list[str]:
        """``command`` inside the sandbox, started in ``workdir`` (within the job's folder)."""
        args = [self.binary, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                "--tmpfs", "/home", "--dir", HOME, "--tmpfs", "/root", "--tmpfs", "/run"]
        args += _system_binds() + _grader_binds()
        args += ["--bind", str(self.job_dir), str(self.job_dir)]
        if self.jax_cache:
            args += ["--ro-bind", self.jax_cache, self.jax_cache]
        args += ["--chdir", str(workdir), "--", *command]
        if not self.cgroups:
            return args
        # A shell enters the cgroups and then becomes bwrap, so that nothing the
        # submission starts escapes them (no Python runs between fork and exec: the
        # grader's process has threads).
        enter = "; ".join(f'echo $$ > "{group}/cgroup.procs"' for group in self.cgroups.values())
        return ["/bin/sh", "-c", f'{enter} && exec "$@"', "sh", *args]

    def hit_memory_limit(self) -> bool:
        """Whether the submission reached its memory limit: the kernel's OOM killer struck
        in its cgroup, or its peak usage touched the limit."""
        group = self.cgroups.get("memory")
        if group is None:
            return False
        try:
            control = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
            peak = int((group / "memory.max_usage_in_bytes").read_text())
            return int(control.get("oom_kill", 0)) > 0 or peak >= self.memory
        except (OSError, ValueError):
            return False

    def kill_all(self, deadline: float = 5.0) -> None:
        """Kill every process the submission started, wherever it went (its cgroup), and
        wait until the cgroups are empty (a process forking while it is killed is seen on
        the next pass)."""
        end = time.monotonic() + deadline
        for group in self.cgroups.values():
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
        for group in self.cgroups.values():
            try:
                group.rmdir()
            except OSError:
                pass
