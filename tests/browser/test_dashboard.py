"""The dashboard as a user sees it: numbers, filters, sorting, kept sessions, and live updates from elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.live import save_in_another_process, serving
from toolctx import session
from toolctx.memory import AgentSummary, MemoryStore
from toolctx.server import create_app


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def memory(sqlite_url: str) -> Iterator[MemoryStore]:
    """Two agents; the worker has items in every tier and one archived."""
    with MemoryStore(sqlite_url) as store:
        worker = store.agent("worker")
        worker.save("TEST_RESULT", "3 passed, 1 failed: test_upload_resumes", importance_score=0.05)
        worker.flash_save()  # archives the COLD test result
        worker.save("TASK", "Add retries with backoff to the uploader")
        worker.save("CODE", "def upload(path, client):\n    return client.put(path.read_bytes())")
        worker.save("CODE", "class Client:\n    def put(self, data): ...")
        worker.save("ERROR", "TimeoutError: PUT /upload took 30.0 s", importance_score=0.5)
        worker.save("PRD_SECTION", "Uploads resume after a network error", importance_score=0.2)
        store.agent("planner").save("TASK", "Plan the resumable uploads work")
        yield store


@pytest.fixture
def dashboard(memory: MemoryStore, context_dir: Path) -> Iterator[str]:
    with session(context_dir, session_id="kept-session", keep=True, threshold=0) as s:
        s.save_context("search_code", {"query": "upload"}, ["uploader.py", "client.py"])
    with serving(create_app(memory, context_dir=context_dir, poll_interval=0.05)) as base:
        yield base


def summary(store: MemoryStore, agent_id: str) -> AgentSummary:
    [found] = [a for a in store.agents() if a.agent_id == agent_id]
    return found


def cell(page: Any, tier: str, column: str) -> str:
    return str(page.inner_text(f'#tier-legend tr[data-tier="{tier}"] .{column}'))


def test_the_chart_and_the_list_show_the_memory_s_numbers(page: Any, dashboard: str, memory: MemoryStore) -> None:
    page.goto(f"{dashboard}/#agent=worker")
    page.wait_for_selector("#item-list tbody tr")
    expected = summary(memory, "worker")
    for tier in ("HOT", "WARM", "COLD"):
        count, tokens = getattr(expected, f"{tier.lower()}_count"), getattr(expected, f"{tier.lower()}_tokens")
        assert cell(page, tier, "count") == f"{count:,}"
        assert cell(page, tier, "tokens") == f"{tokens:,}"
        slices = page.locator(f'#tier-pie circle[data-tier="{tier}"]')
        assert [s.get_attribute("data-count") for s in slices.all()] == ([str(count)] if count else [])
    assert cell(page, "ARCHIVED", "count") == "1"
    unarchived = memory.agent("worker").items()
    rows = page.locator("#item-list tbody tr")
    assert rows.count() == len(unarchived) == 5
    shown = {int(r.get_attribute("data-id")): r.locator(".score").inner_text() for r in rows.all()}
    assert shown == {item.id: f"{item.importance_score:.3f}" for item in unarchived}
    agents = page.locator("#agent-list li")
    assert [a.get_attribute("data-agent") for a in agents.all()] == ["planner", "worker"]


def test_filtering_by_tier_sorting_and_showing_archived_items(page: Any, dashboard: str, memory: MemoryStore) -> None:
    page.goto(f"{dashboard}/#agent=worker")
    page.wait_for_selector("#item-list tbody tr")
    for tier in ("HOT", "WARM", "COLD"):
        page.select_option("#tier-filter", tier)
        expected = [str(item.id) for item in memory.agent("worker").items(tier)]
        page.wait_for_function(
            "([tier, n]) => [...document.querySelectorAll('#item-list tbody tr')]"
            ".filter(r => r.dataset.tier === tier).length === n && "
            "document.querySelectorAll('#item-list tbody tr').length === n",
            arg=[tier, len(expected)],
        )
        assert sorted(r.get_attribute("data-id") for r in page.locator("#item-list tbody tr").all()) == sorted(expected)
        assert page.inner_text("#item-count") == f"{len(expected)} shown of {len(expected)}"
    page.select_option("#tier-filter", "")
    page.check("#show-archived")
    page.wait_for_selector("#item-list tbody tr.archived")
    assert page.locator("#item-list tbody tr").count() == 6
    page.click('#item-list th button[data-sort="tokens"]')
    tokens = [int(t.replace(",", "")) for t in page.locator("#item-list tbody td:nth-child(5)").all_inner_texts()]
    assert tokens == sorted(tokens, reverse=True)
    page.click('#item-list th button[data-sort="tokens"]')
    tokens = [int(t.replace(",", "")) for t in page.locator("#item-list tbody td:nth-child(5)").all_inner_texts()]
    assert tokens == sorted(tokens)


def test_an_item_saved_by_another_process_appears_without_a_reload(
    page: Any, dashboard: str, memory: MemoryStore, sqlite_url: str
) -> None:
    page.goto(f"{dashboard}/#agent=worker")
    page.wait_for_selector("#live[data-state=live]")
    page.wait_for_selector("#item-list tbody tr")
    page.evaluate("window.notReloaded = true")
    before = summary(memory, "worker")
    save_in_another_process(sqlite_url, "worker", "ERROR", "KeyError: 'etag' in resume()")
    page.wait_for_selector("#item-list td.content >> text=KeyError: 'etag' in resume()")
    after = summary(memory, "worker")
    assert after.total_items == before.total_items + 1
    page.wait_for_function(
        "n => document.querySelector('#tier-legend tr[data-tier=\"TOTAL\"] .count').textContent === n",
        arg=f"{after.hot_count + after.warm_count + after.cold_count:,}",
    )
    save_in_another_process(sqlite_url, "reviewer", "TASK", "Review the retry change")
    page.wait_for_selector('#agent-list li[data-agent="reviewer"]')
    assert page.evaluate("window.notReloaded") is True


def test_kept_sessions_show_their_contexts(page: Any, dashboard: str) -> None:
    page.goto(dashboard)
    page.click("#tab-sessions")
    assert not page.is_visible("#view-memory")  # one view at a time
    page.click('#session-list li[data-session="kept-session"] button')
    page.wait_for_selector("#context-list tbody tr")
    assert page.inner_text("#context-list tbody tr td:nth-child(2)") == "search_code"
    page.click("#context-list tbody tr")
    page.wait_for_selector("#context-view:not([hidden])")
    assert '"uploader.py"' in page.inner_text("#context-view")


def test_with_a_token_the_browser_signs_in_once_and_goes_live(page: Any, memory: MemoryStore) -> None:
    with serving(create_app(memory, token="s3cret", poll_interval=0.05)) as base:
        refused = page.goto(f"{base}/")
        assert refused is not None
        assert refused.status == 401
        page.goto(f"{base}/?token=s3cret")
        assert page.url == f"{base}/"  # the token left the address bar
        page.wait_for_selector("#live[data-state=live]")
        page.wait_for_selector('#agent-list li[data-agent="worker"]')


HOSTILE = '<img src=x id=injected onerror="window.pwned=1"><b>bold</b>\x1b]0;pwned\x07\u202eevil'


def test_stored_html_and_escape_sequences_show_as_text(page: Any, memory: MemoryStore, context_dir: Path) -> None:
    with session(context_dir, session_id="hostile", keep=True, threshold=0) as s:
        s.save_context("search", {"query": HOSTILE}, [HOSTILE])
    memory.agent("intruder").save("TASK", HOSTILE)
    with serving(create_app(memory, context_dir=context_dir, poll_interval=0.05)) as base:
        page.goto(f"{base}/#agent=intruder")
        page.wait_for_selector("#item-list tbody tr")
        content = page.inner_text("#item-list tbody tr td.content")
        assert '<img src=x id=injected onerror="window.pwned=1"><b>bold</b>' in content  # as text
        assert "\\x1b]0;pwned\\x07\\u202eevil" in content  # control characters shown, not acted on
        page.click("#tab-sessions")
        page.click('#session-list li[data-session="hostile"] button')
        page.wait_for_selector("#context-list tbody tr")
        assert "<b>bold</b>" in page.inner_text("#context-list tbody tr td.content")
        page.click("#context-list tbody tr")
        page.wait_for_selector("#context-view:not([hidden])")
        view = page.inner_text("#context-view")
        assert "<b>bold</b>" in view
        assert "\\u202eevil" in view
        assert page.is_hidden("#context-more")  # a small context is shown whole
        assert page.evaluate("document.querySelectorAll('#injected, main b').length") == 0
        assert page.evaluate("window.pwned") is None
        shown = page.evaluate("document.body.innerText")
        for raw in ("\x1b", "\x07", "\u202e"):
            assert raw not in shown


def test_a_large_context_is_shown_in_parts(page: Any, memory: MemoryStore, context_dir: Path) -> None:
    with session(context_dir, session_id="large", keep=True, threshold=0) as s:
        s.save_context("dump", {"table": "events"}, "row " * 400_000)  # 1.6 MB stored
    with serving(create_app(memory, context_dir=context_dir, poll_interval=0.05)) as base:
        page.goto(base)
        page.click("#tab-sessions")
        page.click('#session-list li[data-session="large"] button')
        page.click("#context-list tbody tr")
        page.wait_for_selector("#context-more:not([hidden])")
        size = page.evaluate("document.getElementById('context-left-out').textContent")
        assert size.startswith("bytes 0 to 1,048,576 of 1,6")
        assert "--full" in size
        assert len(page.inner_text("#context-view")) <= 1 << 20
        page.click("#context-next")
        page.wait_for_function(  # (a function: the page's policy forbids evaluating a bare expression)
            "() => document.getElementById('context-left-out').textContent.startsWith('bytes 1,048,576')"
        )
        assert page.is_hidden("#context-next")  # the last part
        assert page.inner_text("#context-view").rstrip().endswith('row "}')
