#!/usr/bin/env python3
"""Drives a grouped rdmx-bench HTML page in headless Chromium as a reader
would, over the DevTools protocol on a pipe (--remote-debugging-pipe; no
network, no extra package): a mouse click on a host-pair cell, the page's
Back button, then the keyboard (arrows and Enter from the cell the focus
went back to) and Esc. After each step it writes the DOM and a screenshot,
OUT-STEP.dom and OUT-STEP.png, for html_render_check.py to check.

Usage: html_drill_click.py CHROMIUM PAGE.html OUT MATRIX ROW,COL
  MATRIX is the matrix name of the map to click (its data-matrix), ROW,COL
  the cell's group indices. Steps: click (opens ROW,COL), back (closes it),
  keys (ArrowDown, ArrowLeft, Enter: opens ROW+1,COL-1), escape (closes it),
  space (opens ROW+1,COL-1 again).
Exit 0 when every step ran; what the page shows is for the checker to say.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60           # the whole session
SETTLE_S = 0.3           # after an input event, for hashchange and redraw
VIEWPORT = (1200, 7000)  # as bench_html_render.sh loads pages
LIVE_MAP = "svg.live[data-drill]"   # a map the page's script has wired


class Browser:
    """One headless Chromium with the DevTools protocol on fds 3 and 4."""

    def __init__(self, chromium, url, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():   # Chromium reads commands on fd 3, writes replies on fd 4
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", "--force-device-scale-factor=0.5", url],
            preexec_fn=fds, close_fds=False, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.deadline = time.monotonic() + TIMEOUT_S
        self.session = None

    def call(self, method, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                if time.monotonic() > self.deadline:
                    raise TimeoutError(f"no reply to {method} within {TIMEOUT_S} s")
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise EOFError(f"chromium closed the pipe during {method}")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def attach(self):
        while True:
            pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            if pages:
                break
            time.sleep(SETTLE_S)
        self.session = self.call("Target.attachToTarget", targetId=pages[0]["targetId"], flatten=True)["sessionId"]
        # The first page may still be about:blank; done when ours has
        # loaded and its script has made the maps live.
        ready = "document.readyState === 'complete' && location.protocol === 'file:' && !!document.querySelector(sel)"
        while not self.eval(f"(sel => {ready})({json.dumps(LIVE_MAP)})"):
            if time.monotonic() > self.deadline:
                raise TimeoutError(f"the page did not load, or no map became live ({LIVE_MAP}), in {TIMEOUT_S} s")
            time.sleep(SETTLE_S)

    def click(self, selector):
        box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
                        " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                        " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        if box is None:
            raise LookupError(f"nothing to click at {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
        time.sleep(SETTLE_S)

    def key(self, name, code, text=""):
        """Presses and releases a key; one with text (Enter: "\r") also
        types it, unless the page cancels its keydown, as a real key does."""
        extra = {"text": text} if text else {}
        self.call("Input.dispatchKeyEvent", type="keyDown" if text else "rawKeyDown", key=name, code=name,
                  windowsVirtualKeyCode=code, nativeVirtualKeyCode=code, **extra)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=name, code=name,
                  windowsVirtualKeyCode=code, nativeVirtualKeyCode=code)
        time.sleep(SETTLE_S)

    def save(self, out, step):
        with open(f"{out}-{step}.dom", "w", encoding="utf-8") as f:
            f.write(self.eval("document.documentElement.outerHTML"))
        png = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(f"{out}-{step}.png", "wb") as f:
            f.write(base64.b64decode(png))
        print(f"{step}: {self.eval('location.hash')!r}, focus on "
              f"{self.eval('document.activeElement && document.activeElement.outerHTML.slice(0, 60)')!r}")

    # Chromium's helpers (renderer, network and storage services) share its
    # process group and write into the profile too: all of them go, and the
    # profile is removed once the last has exited (removing it while one
    # still wrote failed the test with ENOTEMPTY).
    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


KEYS = {"ArrowDown": (40, ""), "ArrowLeft": (37, ""), "Enter": (13, "\r"), "Escape": (27, ""), " ": (32, " ")}


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    chromium, page, out, matrix, cell = argv[1:]
    row, col = (int(x) for x in cell.split(","))
    profile = tempfile.mkdtemp(prefix="rdmx-chromium-")
    try:
        b = Browser(chromium, "file://" + os.path.abspath(page), profile)
        try:
            b.attach()
            b.click(f'svg[data-matrix="{matrix}"] rect[data-cell="{row},{col}"]')
            b.save(out, "click")
            b.click(".drill-back")
            b.save(out, "back")
            for k in ("ArrowDown", "ArrowLeft", "Enter"):
                b.key(k, *KEYS[k])
            b.save(out, "keys")
            b.key("Escape", *KEYS["Escape"])
            b.save(out, "escape")
            b.key(" ", *KEYS[" "])   # the focus is back on the cell Enter opened
            b.save(out, "space")
        finally:
            b.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
