"""The Start here page's `git clone` command is the repository address of `_config.yml`,
written there once: the page renders it from the config, and the theme's repository button on
every page links to the same address."""
from __future__ import annotations

import yaml
from bs4 import BeautifulSoup

from built_book import HTML, pages, toc_pages
from notebooks import ROOT
from tied_book.repository import clone_commands, folder_name, repository_url

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
SOURCE = ROOT / "book" / "start_here.md"


def test_the_config_names_one_repository_and_shows_its_button():
    url = CONFIG["repository"]["url"]
    assert url.startswith("https://"), url
    assert CONFIG["html"]["use_repository_button"] is True
    assert repository_url() == url


def test_the_address_is_not_typed_on_the_page():
    """The page takes the address from the config; a second copy would go stale."""
    assert repository_url() not in SOURCE.read_text(encoding="utf-8")


def test_the_folder_is_the_last_part_of_the_address():
    assert folder_name("https://github.com/a/b") == "b"
    assert folder_name("https://github.com/a/b.git/") == "b"


def test_the_built_page_shows_the_config_s_clone_command():
    pages()
    soup = BeautifulSoup((HTML / "book" / "start_here.html").read_text(encoding="utf-8"),
                         "html.parser")
    blocks = [pre.get_text().strip() for pre in soup.select("article pre")]
    assert clone_commands() in blocks, blocks
    assert f"git clone {CONFIG['repository']['url']}" in clone_commands()


def test_every_page_links_to_the_repository():
    url = CONFIG["repository"]["url"]
    for page in pages():
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        if soup.select_one("article") is None:   # search, genindex: no article header
            continue
        buttons = soup.select("a.btn-source-repository-button")
        assert [a.get("href") for a in buttons] == [url], page.relative_to(HTML)


def test_start_here_comes_right_after_the_intro():
    listed = [page.relative_to(HTML).as_posix() for page in toc_pages()]
    assert listed[:2] == ["book/intro.html", "book/start_here.html"], listed[:3]


def test_the_readme_clones_the_config_s_repository():
    """The README cannot render from the config, so it is held to it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    url = CONFIG["repository"]["url"]
    assert f"git clone {url} && cd {folder_name(url)}" in readme
