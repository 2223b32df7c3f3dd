"""Code search: BM25 over functions and classes, following the project as it changes, with a user's own search."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolctx.fresh import _tags
from toolctx.fresh._codesearch import CodeSearch, CodeSearchHit, chunks_of
from toolctx.fresh._tags import extract_tags

FILES = {
    "billing/invoices.py": (
        "DEFAULT_CURRENCY = 'EUR'\n"
        "LATE_FEE_PERCENT = 5\n\n\n"
        "class InvoiceRenderer:\n"
        '    """Turns invoices into PDF documents."""\n\n'
        "    page_size = 'A4'\n\n"
        "    def render_pdf(self, invoice):\n"
        "        return b'%PDF' + invoice.number.encode()\n\n\n"
        "def compute_late_fee(amount, days_late):\n"
        "    if days_late <= 0:\n"
        "        return 0\n"
        "    return amount * LATE_FEE_PERCENT / 100\n"
    ),
    "web/money.ts": (
        "export function formatPrice(value: number): string {\n  return value.toFixed(2);\n}\n\n"
        "export function parseQuantity(text: string): number {\n  return parseInt(text, 10);\n}\n"
    ),
    "svc/ship.go": "package svc\n\nfunc EstimateShipping(weight float64) float64 {\n\treturn weight * 1.5\n}\n",
    "notes.txt": "compute_late_fee is mentioned here but this is not code\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_function_is_found_whole_with_its_lines(project: Path) -> None:
    hits = CodeSearch(project).search("late fee for overdue days", k=3)
    best = hits[0]
    assert (best.path, best.name, best.start_line, best.end_line) == ("billing/invoices.py", "compute_late_fee", 14, 17)
    assert best.text.startswith("def compute_late_fee(amount, days_late):")
    assert best.text.endswith("return amount * LATE_FEE_PERCENT / 100")
    assert best.score > 0
    assert all(hit.path != "notes.txt" for hit in hits)  # only code is searched


def test_camel_case_and_snake_case_names_match_their_words(project: Path) -> None:
    search = CodeSearch(project)
    assert search.search("format the price", k=1)[0].name == "formatPrice"
    assert search.search("estimate shipping cost", k=1)[0].name == "EstimateShipping"
    assert search.search("render pdf", k=1)[0].name == "render_pdf"


def test_chunks_split_classes_from_their_methods_and_keep_top_level_lines() -> None:
    text = FILES["billing/invoices.py"]
    chunks = chunks_of(extract_tags("billing/invoices.py", text), len(text.split("\n")), 150)
    assert ("render_pdf", "InvoiceRenderer", 10, 11) in chunks
    assert ("InvoiceRenderer", "", 5, 9) in chunks  # the class without its method
    assert ("<module>", "", 1, 4) in chunks  # the constants
    short = chunks_of(extract_tags("billing/invoices.py", text), len(text.split("\n")), 2)
    assert ("compute_late_fee", "", 14, 15) in short  # cut at max_lines


def test_the_index_follows_changed_new_and_deleted_files(project: Path) -> None:
    search = CodeSearch(project)
    assert search.search("refund", k=5) == []
    invoices = project / "billing" / "invoices.py"
    invoices.write_text(invoices.read_text() + "\n\ndef issue_refund(invoice):\n    return -invoice.total\n")
    os.utime(invoices, ns=(invoices.stat().st_atime_ns, invoices.stat().st_mtime_ns + 1_000_000))
    assert search.search("refund", k=5)[0].name == "issue_refund"
    (project / "extra.py").write_text("def refund_policy():\n    return 'thirty days'\n")
    assert {hit.name for hit in search.search("refund", k=5)} == {"issue_refund", "refund_policy"}
    invoices.unlink()
    assert [hit.name for hit in search.search("refund", k=5)] == ["refund_policy"]


@dataclass
class Semantic:
    hits: list[CodeSearchHit]
    asked: list[tuple[str, int]]

    def search(self, query: str, k: int) -> list[CodeSearchHit]:
        self.asked.append((query, k))
        return self.hits[:k]


def test_a_users_own_search_is_merged_in(project: Path) -> None:
    own = CodeSearchHit("svc/ship.go", "EstimateShipping", 3, 5, "func EstimateShipping...", 0.9)
    semantic = Semantic([own], [])
    hits = CodeSearch(project, semantic=semantic).search("late fee", k=3)
    assert semantic.asked == [("late fee", 3)]
    assert {hit.name for hit in hits} >= {"compute_late_fee", "EstimateShipping"}
    assert hits[0].name == "compute_late_fee"  # ranked by both counts more than by one
    with pytest.raises(TypeError, match="search"):
        CodeSearch(project, semantic=object())


def test_empty_queries_and_bad_options(project: Path, tmp_path: Path) -> None:
    search = CodeSearch(project)
    assert search.search("   ", k=3) == []
    assert search.search("late fee", k=0) == []
    with pytest.raises(ValueError, match="max_chunk_lines"):
        CodeSearch(project, max_chunk_lines=0)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        CodeSearch(tmp_path / "missing")


def test_without_tree_sitter_python_is_still_chunked(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tags, "_grammars", dict.fromkeys(_tags._GRAMMARS))
    hits = CodeSearch(project).search("late fee", k=2)
    assert (hits[0].name, hits[0].start_line, hits[0].end_line) == ("compute_late_fee", 14, 17)


def test_a_symlink_out_of_the_project_is_not_searched(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def leaked_refund_secret():\n    return 1\n")
    (project / "leak.py").symlink_to(outside)
    assert CodeSearch(project).search("leaked refund secret", k=5) == []
