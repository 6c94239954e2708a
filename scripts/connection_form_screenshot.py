"""Screenshot the ``mysql_cdc`` connection form in the real Airflow UI, and check what it shows.

What it does (docs/connection-form.md):

1. starts a throwaway Airflow api-server (a fresh ``AIRFLOW_HOME`` in a temporary folder, SQLite
   metadata, the simple auth manager with every user an admin, a free port on 127.0.0.1), with this
   checkout's package first on ``PYTHONPATH`` so the provider info the UI reads is this checkout's;
2. asks the api-server for the connection form's metadata (``/ui/connections/hook_meta``, what the
   form is built from) and checks that the ``mysql_cdc`` entry carries the provider's fields, labels
   and placeholders;
3. drives headless Chromium (Debian's ``chromium`` package) over the DevTools protocol: opens the
   Connections page, clicks "Add Connection", picks the "MySQL CDC" type, opens the extra fields and
   checks that the form showed every label (relabelled standard fields, our extra fields) and
   placeholder the provider declares;
4. saves two full-page PNGs, the standard fields (``docs/images/connection-form-mysql-cdc.png`` by
   default) and the provider's extra fields (``...-extra.png``; the UI's accordion shows one section
   at a time), and stops everything it started.

It exits 0 when every check passed, 1 naming what is missing otherwise (the PNG is saved either way,
for a look), 2 when it cannot run (no Chromium, the api-server did not start). No network beyond
127.0.0.1 is used. Run it after changing ``get_provider_info.py``'s connection form::

    .venv/bin/python scripts/connection_form_screenshot.py [--output PATH] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from airflow_mysql_cdc.get_provider_info import CONNECTION_TYPE, get_provider_info  # noqa: E402

AIRFLOW = Path(sys.executable).with_name("airflow")
DEFAULT_OUTPUT = ROOT / "docs" / "images" / "connection-form-mysql-cdc.png"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "headless_shell")
START_TIMEOUT_S = 180.0
UI_TIMEOUT_S = 60.0


class CannotRun(RuntimeError):
    """What is missing to take the screenshot at all (exit 2)."""


def expected_texts() -> dict[str, list[str]]:
    """What the form must show for our connection type: labels and placeholders, from the provider info."""
    form = next(c for c in get_provider_info()["connection-types"] if c["connection-type"] == CONNECTION_TYPE)
    behaviour = form["ui-field-behaviour"]
    return {
        "labels": [
            *behaviour["relabeling"].values(),
            *(field["label"] for field in form["conn-fields"].values()),
        ],
        "placeholders": list(behaviour["placeholders"].values()),
        "hook_name": [form["hook-name"]],
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise CannotRun(
        f"no headless Chromium found (looked for {', '.join(BROWSERS)} on PATH). On Debian/Ubuntu: "
        "apt-get install chromium"
    )


@contextlib.contextmanager
def api_server(folder: Path) -> Iterator[str]:
    """A throwaway api-server on a free port; yields its base URL, stops it (and its children) after."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))
    } | {
        "AIRFLOW_HOME": str(folder / "airflow-home"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{folder / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(folder / "dags"),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__API__BASE_URL": base_url,
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
    }
    (folder / "dags").mkdir(parents=True, exist_ok=True)
    log_path = folder / "api-server.log"
    with log_path.open("ab") as log:
        migrated = subprocess.run(
            [str(AIRFLOW), "db", "migrate"],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=600,
        )
        if migrated.returncode != 0:
            raise CannotRun(f"airflow db migrate failed; its output: {log_path}")
        server = subprocess.Popen(
            [str(AIRFLOW), "api-server", "--host", "127.0.0.1", "--port", str(port)],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                raise CannotRun(f"the api-server exited with {server.returncode}; its log: {log_path}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{base_url}/api/v2/monitor/health", timeout=5),
            ):
                break
            if time.monotonic() > deadline:
                raise CannotRun(
                    f"the api-server did not answer within {START_TIMEOUT_S:.0f}s; its log: {log_path}"
                )
            time.sleep(1)
        yield base_url
    finally:
        stop_group(server)


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the process group this script started, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def check_hook_meta(base_url: str) -> list[str]:
    """What the REST API's form metadata for ``mysql_cdc`` lacks ([] when complete)."""
    with urllib.request.urlopen(f"{base_url}/ui/connections/hook_meta", timeout=30) as response:
        entries = json.load(response)
    ours = next((entry for entry in entries if entry.get("connection_type") == CONNECTION_TYPE), None)
    if ours is None:
        return [f"the api-server lists no {CONNECTION_TYPE!r} connection type (is the provider installed?)"]
    shown = json.dumps(ours)
    expected = expected_texts()
    return [f"hook_meta lacks {text!r}" for texts in expected.values() for text in texts if text not in shown]


@contextlib.contextmanager
def chromium(folder: Path) -> Iterator[str]:
    """Headless Chromium with the DevTools protocol on a free port; yields the page's websocket URL."""
    port = free_port()
    browser = subprocess.Popen(
        [
            find_browser(), "--headless=new",
            f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={folder / 'chromium-profile'}", "--no-first-run", "--no-default-browser-check",
            "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1800",
            # Root cannot use Chromium's sandbox (it refuses to start); the page is our own loopback UI.
            *(["--no-sandbox"] if os.geteuid() == 0 else []),
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "chromium.log").open("ab"),
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
                    pages = [target for target in json.load(response) if target["type"] == "page"]
                if pages:
                    yield pages[0]["webSocketDebuggerUrl"]
                    return
            if browser.poll() is not None or time.monotonic() > deadline:
                raise CannotRun(
                    f"Chromium did not start its DevTools endpoint; see {folder / 'chromium.log'}"
                )
            time.sleep(0.5)
    finally:
        stop_group(browser)


class Page:
    """The few DevTools protocol calls this script needs, over one websocket."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.next_id = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.connection.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.connection.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"in the page: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def click(self, text: str, timeout_s: float = UI_TIMEOUT_S) -> None:
        """A real mouse click (press and release) on the button or option showing ``text``."""
        centre = await self.wait_for(f"{FIND_BY_TEXT}({json.dumps(text)})", f"{text!r}", timeout_s)
        for kind in ("mousePressed", "mouseReleased"):
            await self.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=centre["x"],
                y=centre["y"],
                button="left",
                clickCount=1,
            )

    async def wait_for(self, expression: str, what: str, timeout_s: float = UI_TIMEOUT_S) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.5)
        raise TimeoutError(f"the UI did not show {what} within {timeout_s:.0f}s")


FIND_BY_TEXT = """
(text => {
  const candidates = [...document.querySelectorAll('button, [role=button], [role=option]')];
  const target = candidates.find(e => e.offsetParent !== null && e.textContent.trim() === text);
  if (!target) return null;
  target.scrollIntoView({block: 'center'});
  const box = target.getBoundingClientRect();
  return {x: box.x + box.width / 2, y: box.y + box.height / 2};
})
"""
"""The centre of the visible button or option whose text is ``text`` (null: none yet)."""

PAGE_TEXTS = """
(() => {
  const fields = [...document.querySelectorAll('input, textarea')];
  const placeholders = fields.map(e => e.placeholder).filter(Boolean);
  return {text: document.body.innerText, placeholders};
})()
"""


async def open_form(page: Page, base_url: str) -> None:
    """Connections page, "Add Connection", the MySQL CDC type: the standard fields show."""
    hook_name = expected_texts()["hook_name"][0]
    await page.call("Page.enable")
    await page.call("Runtime.enable")
    await page.call("Page.navigate", url=f"{base_url}/connections")
    await page.click("Add Connection")
    # The type picker is a searchable select (role=combobox): type the hook's name, take the option.
    await page.wait_for(
        "(() => { const input = document.querySelector('input[role=combobox]');"
        " if (!input) return false; input.focus(); return true; })()",
        "the connection type picker",
    )
    await page.call("Input.insertText", text=hook_name)
    await page.click(hook_name)
    await page.wait_for("document.body.innerText.includes('Standard Fields')", "the standard fields")


async def open_extra_fields(page: Page) -> None:
    """The provider's own fields sit in the collapsed "Extra Fields" section (it closes the standard one)."""
    first_extra = json.dumps(expected_texts()["labels"][1])
    await page.click("Extra Fields")
    await page.wait_for(f"document.body.innerText.includes({first_extra})", "the provider's fields")


async def screenshot(page: Page, output: Path) -> None:
    metrics = await page.call("Page.getLayoutMetrics")
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = await page.call(
        "Page.captureScreenshot",
        format="png",
        captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(base64.b64decode(shot["data"]))


def outputs(output: Path) -> tuple[Path, Path]:
    """The two PNGs: the standard fields (``output``) and the extra fields (``<stem>-extra.png``)."""
    return output, output.with_name(f"{output.stem}-extra{output.suffix}")


async def drive(websocket_url: str, base_url: str, output: Path) -> list[str]:
    """Both stages of the form, a PNG of each; returns what the form failed to show."""
    import websockets

    standard_png, extra_png = outputs(output)
    texts: list[str] = []
    placeholders: list[str] = []
    problems = []
    async with websockets.connect(websocket_url, max_size=64 * 1024 * 1024) as connection:
        page = Page(connection)
        for stage, png in ((open_form(page, base_url), standard_png), (open_extra_fields(page), extra_png)):
            try:
                await stage
            except TimeoutError as error:
                problems.append(str(error))
            shown = await page.evaluate(PAGE_TEXTS)
            texts.append(shown["text"])
            placeholders += shown["placeholders"]
            await screenshot(page, png)
    expected = expected_texts()
    everything = "\n".join(texts)
    problems += [f"the form does not show the label {label!r}" for label in expected["labels"]
                 if label not in everything]  # fmt: skip
    problems += [f"the form has no field with the placeholder {placeholder!r}"
                 for placeholder in expected["placeholders"] if placeholder not in placeholders]  # fmt: skip
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help=f"the PNG (default {DEFAULT_OUTPUT})"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, metadata DB)")
    arguments = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="connection-form-"))
    try:
        find_browser()
        with api_server(folder) as base_url:
            problems = check_hook_meta(base_url)
            with chromium(folder) as websocket_url:
                problems += asyncio.run(drive(websocket_url, base_url, arguments.output))
    except CannotRun as error:
        print(f"cannot take the screenshot: {error}", file=sys.stderr)
        return 2
    finally:
        if arguments.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print("saved " + " and ".join(str(png) for png in outputs(arguments.output)))
    if problems:
        print("the connection form is missing:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"the {CONNECTION_TYPE} form shows every label and placeholder the provider declares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
