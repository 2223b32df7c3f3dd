"""How soon the dashboard shows an item that another process saved (target: under 1 s).

    python bench/dashboard.py [--runs 25] [--screenshots docs/images]

Starts ``toolctx serve`` as its own process (SQLite, then a PostgreSQL server it
starts), opens the dashboard in the system Chromium through Playwright, and keeps
a writer process alive beside them. Each run, the writer saves one item and
prints the wall-clock time of its commit; a MutationObserver in the page records
the wall-clock time at which a row with that content enters the item list. The
figure is the difference (same machine, same clock): commit to visible row, with
no reload. The reference, measured in the same run, is the same save made through
the server's own HTTP API, whose event reaches the page in-process.

With ``--screenshots DIR`` it also saves the dashboard's two views as PNG files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.browser.conftest import CHROMIUM_ARGS, find_chromium
from tests.postgres_server import PostgresServer

WRITER = """
import sys, time
from toolctx.memory import MemoryStore
with MemoryStore(sys.argv[1]) as store:
    agent = store.agent("worker")
    print("ready", flush=True)
    for line in sys.stdin:
        agent.save("ERROR", line.strip())
        print(repr(time.time()), flush=True)
"""

# Records, for each awaited text, the wall-clock time (ms) its row entered the item list.
OBSERVER = """
text => {
  window.seen = window.seen || {};
  const look = () => {
    for (const cell of document.querySelectorAll('#item-list td.content'))
      if (cell.textContent === text && !(text in window.seen))
        window.seen[text] = performance.timeOrigin + performance.now();
  };
  new MutationObserver(look).observe(document.querySelector('#item-list tbody'), {childList: true, subtree: true});
  look();
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(db: str, context_dir: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "toolctx.cli", "serve", "--db", db, "--port", str(port), "--context-dir"]
    server = subprocess.Popen([*command, str(context_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/agents", timeout=1).read()
            break
        except OSError as exc:
            if server.poll() is not None or time.monotonic() > deadline:
                output = server.stderr.read() if server.stderr else ""
                raise RuntimeError(f"toolctx serve did not start: {output!r}") from exc
            time.sleep(0.1)
    try:
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)


def seed(db: str) -> None:
    from toolctx.memory import MemoryStore

    with MemoryStore(db) as store:
        worker = store.agent("worker")
        worker.save("TEST_RESULT", "3 passed, 1 failed: test_upload_resumes", importance_score=0.05)
        worker.flash_save()
        worker.save("TASK", "Add retries with exponential backoff to the uploader")
        worker.save("CODE", "def upload(path, client):\n    return client.put(path.read_bytes())")
        worker.save("CODE", "class Client:\n    def put(self, data): ...")
        worker.save("ERROR", "TimeoutError: PUT /upload took 30.0 s", importance_score=0.5)
        worker.save("PRD_SECTION", "Uploads resume after a network error", importance_score=0.2)
        worker.save("TEST_RESULT", "test_retry_backoff passed", importance_score=0.3)
        planner = store.agent("planner")
        planner.save("TASK", "Plan the resumable uploads work")
        planner.save("PRD_SECTION", "Resumable uploads: a 1 GB file survives three network drops")


def measure(page: Any, save: Callable[[str], float], runs: int, label: str) -> list[float]:
    """Milliseconds from each commit to its row in the page."""
    latencies = []
    for run in range(runs):
        text = f"{label} probe {run} {time.time_ns()}"
        page.evaluate(OBSERVER, text)
        committed = save(text)
        page.wait_for_function("text => window.seen && (text in window.seen)", arg=text, timeout=10_000)
        latencies.append(page.evaluate("text => window.seen[text]", text) - committed * 1000)
        time.sleep(0.05)
    return latencies


def through_api(base: str) -> Callable[[str], float]:
    def save(text: str) -> float:
        body = json.dumps({"item_type": "ERROR", "content": text}).encode()
        request = urllib.request.Request(
            f"{base}/api/agents/worker/context/save", data=body, headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=10).read()
        return time.time()  # after the answer: the commit was at most this early

    return save


@contextmanager
def writer(db: str) -> Iterator[Callable[[str], float]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"

    def save(text: str) -> float:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(text + "\n")
        process.stdin.flush()
        return float(process.stdout.readline())

    try:
        yield save
    finally:
        process.stdin.close()
        process.wait(timeout=20)


def report(name: str, values: list[float]) -> None:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(f"| {name} | {statistics.median(values):.0f} | {p95:.0f} | {max(values):.0f} | {len(values)} |", flush=True)


def screenshots(page: Any, base: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.goto(f"{base}/#agent=worker")
    page.wait_for_selector("#live[data-state=live]")
    page.wait_for_selector("#item-list tbody tr")
    page.screenshot(path=str(folder / "dashboard-memory.png"))
    page.click("#tab-sessions")
    page.click("#session-list li button")
    page.wait_for_selector("#context-list tbody tr")
    page.click("#context-list tbody tr")
    page.wait_for_selector("#context-view:not([hidden])")
    page.screenshot(path=str(folder / "dashboard-sessions.png"))
    page.click("#tab-memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--screenshots", type=Path, default=None, metavar="DIR")
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        sys.exit("Chromium is not installed: run scripts/ensure-chromium")
    from playwright.sync_api import sync_playwright

    import toolctx

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {executable}")
    print(f"runs: {args.runs} saves per case; milliseconds from the commit to the row in the page\n")
    print("| case | median ms | p95 ms | max ms | runs |")
    print("|---|---:|---:|---:|---:|")
    with TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        context_dir = Path(tmp) / "context"
        with toolctx.session(context_dir, session_id="20250101T090000-a1b2c3d4", keep=True, threshold=0) as s:
            s.save_context("search_code", {"query": "upload retry"}, ["uploader.py:12", "client.py:40"])
            s.save_context("read_file", {"path": "uploader.py"}, "def upload(path, client):\n    ...")
        with PostgresServer() as postgres:
            for name, db in (("SQLite", f"sqlite:///{tmp}/memory.db"), ("PostgreSQL", postgres.url)):
                seed(db)
                with serve(db, context_dir) as base:
                    if args.screenshots is not None and name == "SQLite":
                        screenshots(page, base, args.screenshots)
                    page.goto(f"{base}/#agent=worker")
                    page.wait_for_selector("#live[data-state=live]")
                    page.wait_for_selector("#item-list tbody tr")
                    reference = measure(page, through_api(base), args.runs, "api")
                    report(f"{name}: HTTP API save (in-process event, reference)", reference)
                    with writer(db) as save:
                        report(f"{name}: save in another process", measure(page, save, args.runs, "process"))
        browser.close()


if __name__ == "__main__":
    main()
