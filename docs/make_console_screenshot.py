"""Screenshot the /web dispatch console: ``docs/console.png`` (desktop, 1440x900) and
``docs/console-phone.png`` (phone, 390x844).

Starts a CodeRedEnv server on a free 127.0.0.1 port, opens ``/web`` in headless Chromium
(Playwright driving ``/usr/bin/chromium``), plays task5 seed 0 for a few heuristic steps by
clicking "Suggest" and "Do it", and saves the first screen at each size.

Usage::

    uv run python docs/make_console_screenshot.py              # writes both pictures in docs/
    uv run python docs/make_console_screenshot.py --out /tmp/console.png --phone-out /tmp/phone.png
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(base: str, proc: subprocess.Popen[bytes], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit("the server did not start")


def shoot(browser: Any, base: str, out: Path, steps: int, viewport: dict[str, int]) -> None:
    """Play ``steps`` heuristic suggestions of task5 seed 0 and save the first screen."""
    page = browser.new_page(viewport=viewport)
    page.goto(base + "/web?task_id=task5&seed=0")
    page.wait_for_selector("[data-testid=map-unit-ALS1]")
    page.click("[data-testid=suggest]")
    for n in range(1, steps + 1):
        page.wait_for_selector("[data-testid=suggested-action]")
        page.click("[data-testid=apply-suggestion]")
        page.wait_for_function(
            "n => parseInt(document.querySelector('[data-testid=step]').textContent) >= n", arg=n
        )
    page.evaluate("window.scrollTo(0, 0)")  # clicking "Do it" scrolled a phone's page down
    page.wait_for_timeout(800)  # the units' move animation
    page.screenshot(path=str(out))
    page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "console.png")
    parser.add_argument("--phone-out", type=Path, default=ROOT / "docs" / "console-phone.png")
    parser.add_argument("--steps", type=int, default=14)
    args = parser.parse_args()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codered_env.server.app", "--host", "127.0.0.1",
                             "--port", str(port)], cwd=ROOT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            shoot(browser, base, args.out, args.steps, DESKTOP)
            shoot(browser, base, args.phone_out, args.steps, PHONE)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"wrote {args.out} and {args.phone_out}")


if __name__ == "__main__":
    main()
