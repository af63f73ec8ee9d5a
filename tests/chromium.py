"""A small client for headless Chromium over the DevTools protocol on a pipe.

Chromium is started with ``--remote-debugging-pipe``: it reads commands from
file descriptor 3 and writes replies and events to descriptor 4, each message
JSON ended by a NUL byte. No port is opened. Used by the inspector's browser
tests and by ``benchmarks/inspector.py``.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Chromium:
    """One headless Chromium process; :meth:`open` loads a page in a fresh tab."""

    def __init__(self, executable: str, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="memctx-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        script = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}'
        self._process = subprocess.Popen(
            ["bash", "-c", script, executable, *FLAGS, f"--user-data-dir={self._profile}"],
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self._tab: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            data = os.read(self._from_browser, 1 << 16)
            if not data:
                break
            buffer += data
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        waiting = self._replies.get(message["id"])
                    if waiting is not None:
                        waiting.put(message)
                else:
                    self.events.append(message)

    def send(self, method: str, params: dict[str, Any] | None = None, **extra: Any) -> Any:
        """Run one protocol command and return its result (raise on a protocol error)."""
        number = next(self._ids)
        reply: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._replies[number] = reply
        message = {"id": number, "method": method, "params": params or {}, **extra}
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            answer = reply.get(timeout=self.timeout)
        except queue.Empty:
            raise BrowserError(f"{method}: no reply in {self.timeout} s") from None
        finally:
            with self._lock:
                del self._replies[number]
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def open(self, path: Path, *, width: int = 1400, height: int = 900) -> Page:
        """Load the file ``path`` in a new tab (closing the last one) and wait until the
        page says it is ready and has painted."""
        if self._tab is not None:  # one tab at a time
            self.send("Target.closeTarget", {"targetId": self._tab})
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._tab = target
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, session["sessionId"])
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        started = time.perf_counter()
        page.send("Page.navigate", {"url": path.resolve().as_uri()})
        page.wait_for("document.readyState === 'complete' && !!document.body.dataset.painted")
        page.wall_ms = (time.perf_counter() - started) * 1000
        return page

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close")
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)


class Page:
    """One tab, attached in its own protocol session."""

    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session
        self.wall_ms = 0.0

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.send(method, params, sessionId=self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (a promise is awaited)."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, condition: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!({condition})"):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {condition}")
            time.sleep(0.01)

    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions of this tab so far."""
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:500])
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in (
                "error",
                "assert",
                "warning",
            ):
                found.append(json.dumps(params["args"])[:500])
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] in (
                "error",
                "warning",
            ):
                found.append(params["entry"].get("text", "")[:500])
        return found

    def screenshot(self) -> bytes:
        """A PNG of the viewport."""
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
