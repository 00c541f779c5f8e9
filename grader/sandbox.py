"""A sandbox per submission: bubblewrap namespaces.

``grader check --sandbox`` and ``grader grade --sandbox`` run each worker (nbval and the
student's kernel) inside ``bwrap`` with its own user, PID, mount, IPC and network
namespaces:

- the system, the Python installation and the virtualenv are read-only;
- ``/tmp`` and the home folder are private and empty;
- the only writable folder that outlives the kernel is the job's own (its notebook
  copy); the grader reads nothing back from it (``grader.supervisor.Channel``);
- the class folder, the user's home, the grader's disk cache, and the chapter modules
  that hold the references and build the hidden cases are not there at all; the
  chapters' probe modules (sent into the kernel anyway) and the JAX compilation cache
  (read-only, filled by the teacher's own run) are;
- there is no network, and no process outside the sandbox can be seen or signalled;
- when the worker ends, or is killed, its PID namespace ends with it: a double-forked,
  ``setsid`` or forking child is killed too.

Memory and processes are counted for everything the submission starts, sandbox or
not, by the job's cgroups (``grader.cgroups``), where the machine lets the grader make
them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

from .registry import is_probe

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
    for path in sorted(chapters.rglob("*.py")):  # bwrap makes the folders of a bound file
        if path.name == "__init__.py" or is_probe(path.stem):
            args += ["--ro-bind", str(path), str(path)]
    return args + ["--remount-ro", str(chapters)]


class Sandbox:
    """One submission's sandbox: a ``bwrap`` command line and the environment inside."""

    def __init__(self, job_dir: Path, env: dict[str, str]):
        self.binary = bwrap()
        self.job_dir = Path(job_dir).resolve()
        # The kernels' JAX cache is read, never written: a kernel's program cannot reach
        # a classmate's kernel.  JAX only warns when it cannot write an entry.
        self.jax_cache = env.get("JAX_COMPILATION_CACHE_DIR", "")
        self.env = {**env, "HOME": HOME, "TMPDIR": "/tmp",
                    "PYTHONWARNINGS": "ignore:Error writing persistent compilation cache entry"}
        if not os.path.isdir(self.jax_cache):
            self.env.pop("JAX_COMPILATION_CACHE_DIR", None)
            self.jax_cache = ""

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
        return args + ["--chdir", str(workdir), "--", *command]
