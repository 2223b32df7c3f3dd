"""The repo map: tags per language, ranking towards the task, fitting the budget, caching and fallbacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolctx.fresh import _tags
from toolctx.fresh._repomap import RepoMap
from toolctx.tokens import EstimateCounter

PROJECT = {
    "shop/pricing.py": (
        "TAX_RATE = 0.2\n\n\n"
        "class PriceCalculator:\n"
        '    """Prices with tax and discounts."""\n\n'
        "    def apply_discount(self, price, percent):\n"
        "        return price * (1 - percent / 100)\n\n"
        "    def with_tax(self, price):\n"
        "        return price * (1 + TAX_RATE)\n\n\n"
        "def round_price(value):\n"
        "    return round(value, 2)\n"
    ),
    "shop/cart.py": (
        "from shop.pricing import PriceCalculator, round_price\n\n\n"
        "class ShoppingCart:\n"
        "    def total(self, items):\n"
        "        calculator = PriceCalculator()\n"
        "        return round_price(sum(calculator.with_tax(i) for i in items))\n"
    ),
    "shop/emails.py": "def send_receipt_email(address):\n    return f'sent to {address}'\n",
    "web/api.js": (
        "class InvoiceView {\n  render(total) {\n    return formatMoney(total);\n  }\n}\n\n"
        "function formatMoney(value) {\n  return value.toFixed(2);\n}\n\n"
        "const parseAmount = (text) => Number(text);\n"
    ),
    "web/types.ts": (
        "export interface LineItem {\n  sku: string;\n  quantity: number;\n}\n\n"
        "export class CartStore {\n  addItem(item: LineItem): void {\n  }\n}\n"
    ),
    "svc/main.go": (
        "package main\n\ntype Quote struct {\n\tWeight float64\n}\n\n"
        "func (q Quote) ShippingCost() float64 {\n\treturn q.Weight * 1.2\n}\n\n"
        "func NewQuote(weight float64) Quote {\n\treturn Quote{Weight: weight}\n}\n"
    ),
    "core/lib.rs": (
        "pub struct Points { total: u64 }\n\n"
        "impl Points {\n    pub fn loyalty_points(&self) -> u64 {\n        self.total / 100\n    }\n}\n\n"
        "pub trait Earn {\n    fn earn(&self) -> u64;\n}\n"
    ),
    "java/Discounts.java": (
        "public class Discounts {\n"
        "    public static int discountPercent(int orders) {\n        return orders > 10 ? 5 : 0;\n    }\n"
        "}\n"
    ),
    "docs/guide.md": "# Guide\n\nHow the shop works.\n",
}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(tmp_path / "project", PROJECT)


def signatures(repo_map: RepoMap, path: str) -> dict[str, tuple[str, str, str]]:
    return {d.name: (d.kind, d.signature, d.parent) for d in repo_map.tags()[path].definitions}


def test_definitions_are_found_in_every_language(project: Path) -> None:
    repo_map = RepoMap(project)
    python = signatures(repo_map, "shop/pricing.py")
    assert python["PriceCalculator"] == ("class", "class PriceCalculator:", "")
    assert python["apply_discount"] == ("method", "def apply_discount(self, price, percent):", "PriceCalculator")
    assert python["round_price"] == ("function", "def round_price(value):", "")
    assert python["TAX_RATE"][0] == "constant"
    javascript = signatures(repo_map, "web/api.js")
    assert javascript["InvoiceView"][0] == "class"
    assert javascript["render"] == ("method", "render(total)", "InvoiceView")
    assert javascript["formatMoney"] == ("function", "function formatMoney(value)", "")
    assert javascript["parseAmount"][1] == "const parseAmount = (text) =>"
    typescript = signatures(repo_map, "web/types.ts")
    assert typescript["LineItem"][0] == "interface"
    assert typescript["addItem"] == ("method", "addItem(item: LineItem): void", "CartStore")
    go = signatures(repo_map, "svc/main.go")
    assert go["ShippingCost"] == ("method", "func (q Quote) ShippingCost() float64", "")
    assert go["NewQuote"][0] == "function"
    assert go["Quote"][0] == "type"
    rust = signatures(repo_map, "core/lib.rs")
    assert rust["loyalty_points"] == ("method", "pub fn loyalty_points(&self) -> u64", "Points")
    assert rust["Earn"][0] == "interface"
    java = signatures(repo_map, "java/Discounts.java")
    assert java["discountPercent"] == ("method", "public static int discountPercent(int orders)", "Discounts")
    assert repo_map.tags()["docs/guide.md"].definitions == ()


def test_the_files_a_task_names_and_what_they_use_rank_first(project: Path) -> None:
    ranked = [path for path, _ in RepoMap(project).rank_files("The cart total is wrong", ["shop/cart.py"])]
    assert ranked[0] == "shop/cart.py"
    assert ranked[1] == "shop/pricing.py"  # the cart uses its definitions
    assert ranked.index("shop/emails.py") > 1


def test_identifiers_paths_and_modules_in_the_task_text_pull_their_files_up(project: Path) -> None:
    repo_map = RepoMap(project)
    assert repo_map.rank_files("ShippingCost() returns 0 for heavy parcels", [])[0][0] == "svc/main.go"
    assert repo_map.rank_files("send_receipt_email ignores the address", [])[0][0] == "shop/emails.py"
    traceback = 'File "/srv/app/shop/emails.py", line 2, in <module>\nTypeError'
    assert repo_map.rank_files(traceback, [])[0][0] == "shop/emails.py"
    assert repo_map.rank_files("importing shop.emails fails", [])[0][0] == "shop/emails.py"


def test_the_rendered_map_shows_ranked_symbols_under_their_file_and_class(project: Path) -> None:
    text = RepoMap(project).render("apply_discount gives negative prices", [], 1000)
    lines = text.splitlines()
    assert lines[0] == "shop/pricing.py:"
    assert "  class PriceCalculator:" in lines
    assert "    def apply_discount(self, price, percent):" in lines
    assert "docs/guide.md" in lines  # files without symbols are listed by path


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(min_value=0, max_value=400))
def test_the_map_never_exceeds_its_budget(tmp_path_factory: pytest.TempPathFactory, budget: int) -> None:
    root = write(tmp_path_factory.mktemp("budget"), PROJECT)
    counter = EstimateCounter()
    text = RepoMap(root, counter).render("PriceCalculator with_tax", ["shop/cart.py"], budget)
    assert counter.count(text) <= budget
    if budget >= counter.count("shop/pricing.py:\n  class PriceCalculator:\n"):
        assert text  # something fits, so something is shown


def test_a_bigger_budget_shows_more(project: Path) -> None:
    repo_map = RepoMap(project)
    small, large = repo_map.render("the cart", [], 30), repo_map.render("the cart", [], 1000)
    assert len(small.splitlines()) < len(large.splitlines())
    assert repo_map.render("the cart", [], 0) == ""
    with pytest.raises(ValueError, match="max_tokens"):
        repo_map.render("the cart", [], -1)


def test_a_changed_file_is_parsed_again_and_only_it(project: Path) -> None:
    repo_map = RepoMap(project)
    repo_map.render("cart", [], 500)
    parsed = repo_map.cache.parsed
    emails = project / "shop" / "emails.py"
    emails.write_text(emails.read_text() + "\n\ndef send_refund_email(address):\n    return address\n")
    os.utime(emails, ns=(emails.stat().st_atime_ns, emails.stat().st_mtime_ns + 1_000_000))
    assert "send_refund_email" in signatures(repo_map, "shop/emails.py")
    assert repo_map.cache.parsed == parsed + 1
    (project / "shop" / "cart.py").unlink()
    assert "shop/cart.py" not in repo_map.tags()


def test_tags_are_kept_on_disk_outside_the_project(project: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "tag-cache"
    first = RepoMap(project, cache_dir=cache_dir)
    first.tags()
    assert first.cache.parsed > 0
    _tags._shared.clear()  # a new process: nothing in memory
    second = RepoMap(project, cache_dir=cache_dir)
    assert second.tags()["shop/pricing.py"] == first.tags()["shop/pricing.py"]
    assert second.cache.parsed == 0
    assert not any(p.name.startswith("tags-v") for p in project.rglob("*"))
    with pytest.raises(ValueError, match="inside the project"):
        RepoMap(project, cache_dir=project / ".cache")


def test_without_a_grammar_python_falls_back_to_lines_and_others_to_paths(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tags, "_grammars", dict.fromkeys(_tags._GRAMMARS))
    repo_map = RepoMap(project)
    pricing = repo_map.tags()["shop/pricing.py"]
    assert pricing.parser == "regex"
    by_name = {d.name: d for d in pricing.definitions}
    assert (by_name["apply_discount"].kind, by_name["apply_discount"].parent) == ("method", "PriceCalculator")
    assert (by_name["apply_discount"].line, by_name["apply_discount"].end_line) == (7, 8)
    assert repo_map.tags()["svc/main.go"].parser == ""
    text = repo_map.render("apply_discount", [], 1000)
    assert "    def apply_discount(self, price, percent):" in text.splitlines()
    assert "svc/main.go" in text.splitlines()


def test_nothing_outside_the_root_is_read(project: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere", {"leak.py": "def leaked_secret():\n    pass\n"})
    (project / "link.py").symlink_to(outside / "leak.py")
    (project / "linked_dir").symlink_to(outside, target_is_directory=True)
    text = RepoMap(project).render("leaked_secret", [], 5000)
    assert "leaked_secret" not in text
    assert "linked_dir" not in text


def test_a_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a directory"):
        RepoMap(tmp_path / "missing")


def test_a_handed_listing_is_used_instead_of_scanning(project: Path) -> None:
    repo_map = RepoMap(project)
    listing = repo_map.files.scan()[0]
    repo_map.refresh([row for row in listing if row[0] != "shop/emails.py"])
    assert "shop/emails.py" not in dict(repo_map.rank_files("send_receipt_email", []))
    repo_map.refresh()
    assert repo_map.rank_files("send_receipt_email", [])[0][0] == "shop/emails.py"


def test_the_ranking_is_the_same_without_numpy(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolctx.fresh import _rank

    task = "PriceCalculator.with_tax is wrong for the ShoppingCart total"
    with_numpy = RepoMap(project).rank_files(task, ["shop/cart.py"])
    rendered = RepoMap(project).render(task, ["shop/cart.py"], 200)
    monkeypatch.setattr(_rank, "_numpy", lambda: None)
    without = RepoMap(project).rank_files(task, ["shop/cart.py"])
    assert [path for path, _ in without] == [path for path, _ in with_numpy]
    assert [score for _, score in without] == pytest.approx([score for _, score in with_numpy], rel=1e-6, abs=1e-9)
    assert RepoMap(project).render(task, ["shop/cart.py"], 200) == rendered


def test_a_damaged_disk_cache_entry_is_parsed_again(project: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "tag-cache"
    RepoMap(project, cache_dir=cache_dir).tags()
    for entry in cache_dir.rglob("*.json"):
        entry.write_bytes(b"{not json")
    _tags._shared.clear()
    repo_map = RepoMap(project, cache_dir=cache_dir)
    assert "PriceCalculator" in signatures(repo_map, "shop/pricing.py")
    assert repo_map.cache.parsed > 0
