"""Where the book's code lives, read from ``_config.yml`` (``repository.url``), the address the
theme's repository button links to: the Start here page renders its ``git clone`` command from
it, so the address is written once."""
from __future__ import annotations

from pathlib import Path

import yaml

CONFIG = Path(__file__).resolve().parent.parent / "_config.yml"


def repository_url(config: Path = CONFIG) -> str:
    """``repository.url`` of the book's configuration."""
    return yaml.safe_load(config.read_text(encoding="utf-8"))["repository"]["url"]


def folder_name(url: str) -> str:
    """The folder ``git clone URL`` makes: the address's last part, without ``.git``."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return name[: -len(".git")] if name.endswith(".git") else name


def clone_commands(config: Path = CONFIG) -> str:
    """The shell lines that fetch the code and enter its folder."""
    url = repository_url(config)
    return f"git clone {url}\ncd {folder_name(url)}"


def clone_block(config: Path = CONFIG) -> str:
    """Those lines as a Markdown ``bash`` block, for a cell to display."""
    return f"```bash\n{clone_commands(config)}\n```"
