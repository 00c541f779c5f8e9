"""The built HTML book, and a headless chromium to open its pages (no browser-automation package).

``TIED_HTML`` points at another build (default: ``_build/html`` in the repository);
``serve()`` serves it on 127.0.0.1. The browser is Debian's chromium, driven over the
DevTools protocol on a pipe (``--remote-debugging-pipe``: it reads commands on fd 3 and
writes answers and events on fd 4, one JSON message per NUL-terminated record): no port,
no websocket package, no browser download. A proxy that does not exist disables the
network: requests to any host but this machine fail; file:// and 127.0.0.1 pages load.
"""
from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from notebooks import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from serve import QuietHandler, QuietServer  # noqa: E402  (make serve's quiet static server)

HTML = Path(os.environ.get("TIED_HTML", ROOT / "_build" / "html")).resolve()
BROWSER_PACKAGES = ["chromium", "fonts-noto-cjk"]


def pages() -> list[Path]:
    """Every built HTML page (not the files under _static); fails if there is no build."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML / 'index.html'} is missing: build the book first "
                    "(`make book`; `make test` builds it before running the tests)", pytrace=False)
    return sorted(p for p in HTML.rglob("*.html") if p.relative_to(HTML).parts[0] != "_static")


def toc_pages() -> list[Path]:
    """The pages of the table of contents, in its order, from the _toc.yml of the build's
    repository (this repository's for a build elsewhere, `--path-output`)."""
    pages()
    own = HTML.parent.parent / "_toc.yml"
    toc = yaml.safe_load((own if own.is_file() else ROOT / "_toc.yml").read_text(encoding="utf-8"))

    def files(node):
        if isinstance(node, list):
            for item in node:
                yield from files(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                yield from [value] if key in ("root", "file") else files(value)

    listed = [HTML / f"{name}.html" for name in files(toc)]
    if missing := [page.relative_to(HTML).as_posix() for page in listed if not page.is_file()]:
        pytest.fail(f"_toc.yml lists pages that {HTML} does not hold: {missing}; rebuild the book",
                    pytrace=False)
    return listed


def korean_fonts() -> set[str]:
    """Font families that fontconfig says cover Korean."""
    if not shutil.which("fc-list"):
        return set()
    listed = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True).stdout
    return {name.strip() for line in listed.splitlines() for name in line.split(",") if name.strip()}


def find_chromium() -> str:
    """Debian's chromium; with a Korean font, installed with apt when missing and we are root."""
    if shutil.which("chromium") and korean_fonts():
        return shutil.which("chromium")
    command = ["apt-get", "install", "-y", "--no-install-recommends", *BROWSER_PACKAGES]
    if os.geteuid() != 0:
        pytest.fail(f"chromium and a Korean font are needed: run `sudo {' '.join(command)}`", pytrace=False)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["apt-get", "update", "-qq"], command):
        done = subprocess.run(step, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode:
            pytest.fail(f"`{' '.join(step)}` failed:\n{done.stderr[-2000:]}", pytrace=False)
    return shutil.which("chromium")


@contextlib.contextmanager
def serve(root: Path = HTML):
    """An HTTP server for ``root`` on 127.0.0.1 (a free port), in a thread; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    with QuietServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


@contextlib.contextmanager
def served_book(root: Path = HTML):
    """Chromium and the build served over HTTP (``serve``); yields (browser, base URL)
    and closes both after the block."""
    browser = Chromium(find_chromium())
    try:
        with serve(root) as base:
            yield browser, base
    finally:
        browser.close()


class ProtocolError(RuntimeError):
    pass


class Chromium:
    """One headless browser; ``tab()`` opens a tab, whose events are kept apart from others'."""

    def __init__(self, binary: str, timeout: float = 20.0):
        self.timeout, self._events, self._buffer, self._next_id = timeout, {}, b"", 0
        self._profile = tempfile.TemporaryDirectory(prefix="tied-chromium-")
        self._log = Path(self._profile.name) / "stderr.log"
        to_chrome, from_chrome = os.pipe(), os.pipe()
        # Chromium's ends go to fd >= 10 first, so that moving them to 3 and 4 cannot clobber them.
        theirs = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome[0], from_chrome[1])]
        for fd in (to_chrome[0], from_chrome[1]):
            os.close(fd)
        self._write, self._read = to_chrome[1], from_chrome[0]

        def child_fds():
            os.dup2(theirs[0], 3)
            os.dup2(theirs[1], 4)

        with open(self._log, "wb") as log:
            self.process = subprocess.Popen(
                [binary, "--headless", "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
                 "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
                 "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=127.0.0.1;localhost;[::1]",
                 "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                preexec_fn=child_fds, close_fds=False)
        for fd in theirs:
            os.close(fd)

    def receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError(f"chromium did not answer in time; its stderr ends:\n{self.stderr()}")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise ProtocolError(f"chromium exited (code {self.process.poll()}); its stderr ends:\n{self.stderr()}")
            self._buffer += chunk
        record, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(record)
        if "method" in message and message.get("sessionId") in self._events:
            self._events[message["sessionId"]].append(message)
        return message

    def stderr(self) -> str:
        return self._log.read_text(errors="replace")[-2000:] if self._log.is_file() else ""

    def call(self, method: str, session: str | None = None, timeout: float | None = None, **params) -> dict:
        """Send one command (to a tab when ``session`` is given) and return its result."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while (answer := self.receive(deadline)).get("id") != self._next_id:
            pass
        if "error" in answer:
            raise ProtocolError(f"{method}: {answer['error']}")
        return answer["result"]

    def tab(self, width: int = 1280, height: int = 900) -> "Tab":
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self._events[session] = []
        tab = Tab(self, target, session)
        for domain in ("Page", "Runtime", "Network", "DOM", "CSS", "Log"):
            tab.call(f"{domain}.enable")
        tab.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                 deviceScaleFactor=1, mobile=False)
        return tab

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (ProtocolError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._write, self._read):
            os.close(fd)
        self._profile.cleanup()


class Tab:
    def __init__(self, browser: Chromium, target: str, session: str):
        self.browser, self.target, self.session = browser, target, session
        self.events = browser._events[session]

    def call(self, method: str, timeout: float | None = None, **params) -> dict:
        return self.browser.call(method, self.session, timeout, **params)

    def evaluate(self, expression: str, timeout: float | None = None):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", timeout, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, page: Path | str, timeout: float | None = None) -> None:
        """Load a local file or a URL and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", url=page.as_uri() if isinstance(page, Path) else page)
        deadline = time.monotonic() + (timeout or self.browser.timeout)
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            self.browser.receive(deadline)

    def wait_for(self, expression: str, timeout: float | None = None, every: float = 0.1):
        """Poll a JavaScript expression until it is truthy; its last value either way."""
        deadline = time.monotonic() + (timeout or self.browser.timeout)
        while not (value := self.evaluate(expression)) and time.monotonic() < deadline:
            time.sleep(every)
        return value

    def click(self, selector: str) -> None:
        """A mouse click at the middle of the first visible element matching ``selector``, as
        a reader's: whatever is drawn on top of it there gets the click."""
        x, y = self.evaluate(f"""(() => {{
          const e = [...document.querySelectorAll({json.dumps(selector)})].find(e => e.checkVisibility());
          const box = e.getBoundingClientRect();
          return [box.x + box.width / 2, box.y + box.height / 2];
        }})()""")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def press(self, key: str, code: int) -> None:
        """A key pressed and released (``key`` as DOM names it, ``code`` its Windows key code)."""
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key,
                      windowsVirtualKeyCode=code)

    def fonts(self, selector: str) -> list[dict]:
        """The fonts chromium draws the text of the first element matching ``selector`` with."""
        root = self.call("DOM.getDocument")["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        return self.call("CSS.getPlatformFontsForNode", nodeId=node)["fonts"] if node else []

    def screenshot(self, path: Path, max_height: int = 8000, whole: bool = True) -> None:
        """A PNG of the page, as wide as it is and at most ``max_height`` pixels tall, or of
        the screen only (``whole=False``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if not whole:
            shot = self.call("Page.captureScreenshot", 60, format="png", optimizeForSpeed=True)
            path.write_bytes(base64.b64decode(shot["data"]))
            return
        width, height = self.evaluate("[document.documentElement.scrollWidth,"
                                      " document.documentElement.scrollHeight]")
        # A viewport as tall as the shot: capturing beyond the viewport shifts the page left.
        view = self.evaluate("[window.innerWidth, window.innerHeight]")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=min(height, max_height),
                  deviceScaleFactor=1, mobile=False)
        shot = self.call("Page.captureScreenshot", 60, format="png", optimizeForSpeed=True)
        self.call("Emulation.setDeviceMetricsOverride", width=view[0], height=view[1],
                  deviceScaleFactor=1, mobile=False)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self.browser.call("Target.closeTarget", targetId=self.target)
        self.browser._events.pop(self.session, None)
