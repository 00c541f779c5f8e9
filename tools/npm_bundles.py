"""Unpack the prebuilt npm bundles that package.json pins under ``prebuiltBundles``.

A package there is used for its built files only (thebe's ``lib/``: one webpack bundle that
holds every dependency), so its dependency tree is not installed: ``npm ci`` would install
hundreds of JupyterLab packages that nothing loads, and the registry mirror cannot resolve
them all.  Each one is fetched with ``npm pack`` (the ordinary client, from the registry),
checked against the sha512 integrity pinned next to its version, and unpacked into
``node_modules/<name>``, where ``tools/offline_assets.py`` finds it.  Run after ``npm ci``
(which empties node_modules), as the Makefile does.
"""
from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def unpack(spec: str, pinned: str, modules: Path) -> None:
    name = spec.rpartition("@")[0]
    with tempfile.TemporaryDirectory() as scratch:
        packed = subprocess.run(["npm", "pack", spec, "--json", "--pack-destination", scratch],
                                capture_output=True, text=True)
        if packed.returncode:
            sys.exit(f"npm pack {spec} failed: {(packed.stderr.strip().splitlines() or ['no message'])[-1]}")
        tarball = Path(scratch) / json.loads(packed.stdout)[0]["filename"]
        if (found := integrity(tarball)) != pinned:
            sys.exit(f"{spec}: integrity {found} is not the one pinned in package.json ({pinned})")
        target = modules / name
        shutil.rmtree(target, ignore_errors=True)
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="data")
        shutil.move(Path(scratch) / "package", target)


def main() -> None:
    bundles = json.loads((ROOT / "package.json").read_text())["prebuiltBundles"]
    for spec, pinned in bundles.items():
        unpack(spec, pinned, ROOT / "node_modules")


if __name__ == "__main__":
    main()
