"""Sphinx extension: serve the book's browser assets from ``_static``, never from a CDN.

``npm ci`` installs the packages pinned in ``package.json``/``package-lock.json`` into
``node_modules``; this extension copies the files named by the ``offline_assets`` setting
(``{folder under _static: [paths or globs relative to the repository root]}``, see
``_config.yml``) into the build output before any page is written, so that Sphinx adds its
``?v=`` checksum to them. Nothing third-party is committed to the repository.
"""
from __future__ import annotations

import glob
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ConfigError


def copy_assets(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    root, static = Path(app.confdir), Path(app.outdir) / "_static"
    for folder, patterns in app.config.offline_assets.items():
        for pattern in patterns:
            sources = sorted(glob.glob(pattern, root_dir=root))
            if not sources:
                hint = " (run `npm ci`, as `make book` does)" if pattern.startswith("node_modules/") else ""
                raise ConfigError(f"offline_assets: nothing matches {pattern}{hint}")
            for source in sources:
                target = static / folder / Path(source).name
                if (root / source).is_dir():
                    shutil.copytree(root / source, target, dirs_exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(root / source, target)


def setup(app: Sphinx) -> dict:
    app.add_config_value("offline_assets", {}, "html", types=[dict])
    app.connect("builder-inited", copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
