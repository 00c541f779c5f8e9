"""``make serve``: the built book, and a Jupyter server for its "Run code" button.

Both listen on 127.0.0.1 only.  The Jupyter server (from the Python running this, the
project's .venv) has a fresh random token and accepts cross-origin requests from the book's
address only (``ServerApp.allow_origin``, which also admits its websockets); requests that
carry the token need no XSRF cookie (jupyter_server skips that check for token-authenticated
requests), so nothing else is relaxed.  Kernels start in the folder of the page that asks
(the repository is the server's root), and a kernel left idle by a closed page is stopped
after a while.

It prints one address to open: the book's first page, with the server's address and token
in the fragment (``#jupyter=...&token=...``), which the browser never sends to a server;
``book/_static/live_code.js`` keeps them for the book's other pages.  Ctrl-C stops both.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
# A kernel with no page connected to it and idle this long is shut down (seconds).
IDLE_KERNEL_TIMEOUT = 1800


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A page closed while a file was on its way: nothing to report.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_page(html: Path) -> str:
    """The page index.html sends the reader to (jupyter-book writes a redirect there)."""
    found = re.search(r'http-equiv="refresh" content="0; url=([^"]+)"', (html / "index.html").read_text(), re.I)
    return found.group(1) if found else "index.html"


def jupyter_command(port: int, token: str, origin: str) -> list[str]:
    command = [
        sys.executable, "-m", "jupyter_server", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.allow_origin={origin}",
        f"--ServerApp.root_dir={ROOT}",
        f"--MappingKernelManager.cull_idle_timeout={IDLE_KERNEL_TIMEOUT}",
        "--MappingKernelManager.cull_interval=60", "--MappingKernelManager.cull_connected=False",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")   # containers; a reader's own machine never needs it
    return command


def wait_until_up(url: str, token: str, process: subprocess.Popen, timeout: float = 120) -> bool:
    """True once the server answers an authenticated request; False if it died or timed out."""
    request = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(request, timeout=2):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def stop(process: subprocess.Popen) -> None:
    """SIGTERM (the server shuts its kernels down), then SIGKILL if it hangs."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built book")
    parser.add_argument("--port", type=int, default=0, help="the book's port (default: a free one)")
    parser.add_argument("--jupyter-port", type=int, default=0,
                        help="the Jupyter server's port (default: a free one)")
    args = parser.parse_args(argv)
    html = args.html.resolve()
    if not (html / "index.html").is_file():
        print(f"{html / 'index.html'} is missing: run `make book` first", file=sys.stderr)
        return 1

    handler = functools.partial(QuietHandler, directory=str(html))
    try:
        book = QuietServer(("127.0.0.1", args.port), handler)
    except OSError as error:
        print(f"cannot serve the book on 127.0.0.1:{args.port}: {error.strerror}", file=sys.stderr)
        return 1
    book_url = f"http://127.0.0.1:{book.server_address[1]}"
    jupyter_port, token = args.jupyter_port or free_port(), secrets.token_hex(24)
    jupyter_url = f"http://127.0.0.1:{jupyter_port}"
    log = tempfile.NamedTemporaryFile(prefix="tied-jupyter-", suffix=".log", delete=False)
    # Its own session: Ctrl-C in the terminal reaches this process only, which then stops
    # the server without the server asking "Shutdown this Jupyter server (y/[n])?".
    jupyter = subprocess.Popen(jupyter_command(jupyter_port, token, book_url), cwd=ROOT,
                               stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    threading.Thread(target=book.serve_forever, daemon=True).start()
    # Ctrl-C, and a SIGTERM too, stop both servers (also where a shell started this in the
    # background, with SIGINT ignored).
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupt)
    try:
        if not wait_until_up(jupyter_url, token, jupyter):
            stop(jupyter)
            print(f"the Jupyter server did not start; its log ({log.name}) ends:\n"
                  f"{Path(log.name).read_text(errors='replace')[-2000:]}", file=sys.stderr)
            return 1
        address = f"{book_url}/{first_page(html)}#{urlencode({'jupyter': jupyter_url, 'token': token})}"
        print(f"Open the book with live code: {address}", flush=True)
        print(f"(Jupyter's log: {log.name}. Ctrl-C stops the book and the server.)", flush=True)
        code = jupyter.wait()
        print(f"the Jupyter server stopped (exit code {code}); its log: {log.name}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        stop(jupyter)
        Path(log.name).unlink()   # stopped as asked: nothing in the log to read
        return 0
    finally:
        stop(jupyter)
        book.shutdown()
        book.server_close()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
