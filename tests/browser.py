"""Headless Chromium driven over the Chrome DevTools Protocol, for the site tests.

Debian's Chromium (``make test`` installs it) is started with a remote-debugging
port; one page is driven through a websocket (tornado's client, already in the
toolchain). ``Browser.visit(url)`` loads a page and returns what the site tests
look at: console errors, images, cell outputs, Colab links, solutions, navigation.
"""

import asyncio
import base64
import json
import os
import pathlib
import shutil
import subprocess
import time
import urllib.request

from tornado.websocket import websocket_connect

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")

# What the tests read from a loaded page, gathered in the page itself.
FACTS_JS = r"""
(() => {
  // sphinx-togglebutton collapses a solution to zero height, hidden: count neither as shown
  const visible = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})
    && el.getBoundingClientRect().height > 0;
  const article = document.querySelector("article.bd-article") || document.body;
  return {
    title: document.title,
    images: [...document.images].map((i) => ({
      src: i.currentSrc || i.src, complete: i.complete,
      width: i.naturalWidth, height: i.naturalHeight,
      in_article: article.contains(i)})),
    outputs: [...document.querySelectorAll(".cell_output")].map((o) => ({
      text: o.textContent, traceback: !!o.querySelector(".traceback, .output.error")})),
    colab: [...document.querySelectorAll('a[href*="colab.research.google.com"]')]
      .map((a) => a.href),
    solutions: [...document.querySelectorAll(".solution")].map((s) => {
      const title = (c) => c.matches(".admonition-title, summary, button");
      return {
        id: s.id,
        title_visible: [...s.children].some((c) => title(c) && visible(c)),
        body_visible: [...s.children].some((c) =>
          !title(c) && visible(c) && c.textContent.trim() !== ""),
      };
    }),
    nav: [...document.querySelectorAll("nav.bd-docs-nav a.reference.internal")]
      .map((a) => a.href.split("#")[0]),
  };
})()
"""


def find_chromium():
    """The Chromium executable: $CHROMIUM, else the first of CANDIDATES on PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    return next((shutil.which(c) for c in CANDIDATES if shutil.which(c)), None)


class Browser:
    """One headless Chromium with one page, driven synchronously."""

    def __init__(self, executable, profile_dir, width=1280, height=1000):
        profile_dir = pathlib.Path(profile_dir)
        self.width = width
        self.proc = subprocess.Popen(
            # --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers' /dev/shm
            # is small (64 MB in Docker) and Chromium's renderer crashes on a long page
            [executable, "--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
             "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
             "--remote-debugging-port=0", f"--user-data-dir={profile_dir}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{executable} did not open its debugging port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.loop = asyncio.new_event_loop()
        self.ws = self.loop.run_until_complete(self._connect(page["webSocketDebuggerUrl"]))
        self.next_id = 0
        self.events = []
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    # -- protocol

    @staticmethod
    async def _connect(url):
        # inside a coroutine, so that tornado binds the connection to self.loop
        return await websocket_connect(url, max_message_size=256 << 20)

    async def _receive(self, timeout):
        msg = await asyncio.wait_for(self.ws.read_message(), timeout)
        if msg is None:
            raise RuntimeError("Chromium closed the DevTools connection")
        return json.loads(msg)

    async def _send(self, method, params, timeout):
        self.next_id += 1
        self.ws.write_message(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = await self._receive(timeout)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            if "method" in msg:
                self.events.append(msg)

    def send(self, method, timeout=30, **params):
        return self.loop.run_until_complete(self._send(method, params, timeout))

    async def _wait_event(self, method, timeout):
        deadline = time.monotonic() + timeout
        while not any(e["method"] == method for e in self.events):
            self.events.append(await self._receive(max(deadline - time.monotonic(), 0.01)))

    async def _drain(self, seconds):
        # Collect what arrives in the next `seconds` (late console errors, async scripts).
        deadline = time.monotonic() + seconds
        try:
            while True:
                msg = await self._receive(max(deadline - time.monotonic(), 0.001))
                if "method" in msg:
                    self.events.append(msg)
        except asyncio.TimeoutError:
            pass

    # -- what the tests use

    def visit(self, url, settle=0.5):
        """Load `url`, wait for its load event, and return the page's facts."""
        self.events = []
        self.send("Page.navigate", url=url)
        self.loop.run_until_complete(self._wait_event("Page.loadEventFired", 60))
        self.wait(settle)
        facts = self.evaluate(FACTS_JS)
        facts["url"] = url
        facts["console_errors"] = self.console_errors()
        return facts

    def wait(self, seconds):
        """Let the page run for `seconds` (animations, late scripts), keeping its events."""
        self.loop.run_until_complete(self._drain(seconds))

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")  # undefined has no value

    def console_errors(self):
        """Errors the page logged: console.error, uncaught exceptions, failed loads."""
        errors = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                errors.append("console.error: " + " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif e["method"] == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                errors.append("uncaught: " + d.get("exception", {}).get("description", d["text"]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                errors.append(f"{p['entry']['source']}: {p['entry']['text']} "
                              f"({p['entry'].get('url', '')})")
        return errors

    def screenshot(self, path, max_height=8000):
        """Save a PNG of the whole current page (up to `max_height` CSS pixels)."""
        # Grow the viewport to the page's height, as a tall window would show it.
        height = min(int(self.evaluate("document.documentElement.scrollHeight")), max_height)
        self.send("Emulation.setDeviceMetricsOverride", width=self.width, height=height,
                  deviceScaleFactor=1, mobile=False)
        try:
            data = self.send("Page.captureScreenshot", format="png")["data"]
        finally:
            self.send("Emulation.clearDeviceMetricsOverride")
        pathlib.Path(path).write_bytes(base64.b64decode(data))
        return path

    def close(self):
        if getattr(self, "ws", None) is not None:
            self.ws.close()
            self.loop.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
