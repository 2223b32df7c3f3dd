"""A small multi-language project written for each test, and a snapshot to prove nothing writes to it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from toolctx.tokens import EstimateCounter

FILES = {
    "README.md": "# Shop\n\nA small shop: payments, refunds and a web front end.\n",
    "ARCHITECTURE.md": "# Architecture\n\nThe `pkg` package handles money; `web` renders it.\n",
    ".gitignore": "build/\n*.log\nsecret.txt\n",
    "build/generated.py": "def generated_payment_code():\n    return 'ignored by gitignore'\n",
    "app.log": "charge_card failed at 12:00\n",
    "secret.txt": "API_KEY=do-not-read-me\n",
    "pkg/__init__.py": '"""Payment processing: charges, refunds and currency conversion."""\n',
    "pkg/payments.py": (
        "from pkg.currency import convert_currency\n"
        "from . import refunds\n\n\n"
        "def charge_card(card, amount, currency):\n"
        '    """Charge a card, converting the amount to euros first."""\n'
        "    euros = convert_currency(amount, currency, 'EUR')\n"
        "    return {'card': card, 'charged': euros}\n"
    ),
    "pkg/currency.py": (
        "RATES = {'USD': 0.9, 'EUR': 1.0}\n\n\n"
        "def convert_currency(amount, source, target):\n"
        "    return amount * RATES[source] / RATES[target]\n"
    ),
    "pkg/refunds.py": "def refund_payment(payment_id):\n    return {'refunded': payment_id}\n",
    "web/src/api.ts": (
        "import { formatPrice } from './format';\n\n"
        "export function renderInvoice(total: number): string {\n"
        "  return `Invoice: ${formatPrice(total)}`;\n"
        "}\n"
    ),
    "web/src/format.ts": "export function formatPrice(value: number): string {\n  return value.toFixed(2);\n}\n",
    "svc/main.go": (
        'package main\n\nimport "fmt"\n\n'
        "func ShippingQuote(weightKg float64) float64 {\n\treturn 4.5 + weightKg*1.2\n}\n\n"
        "func main() {\n\tfmt.Println(ShippingQuote(2))\n}\n"
    ),
    "core/src/lib.rs": "pub fn loyalty_points(total_cents: u64) -> u64 {\n    total_cents / 100\n}\n",
    "java/App.java": (
        "public class App {\n    public static int discountPercent(int orders) { return orders > 10 ? 5 : 0; }\n}\n"
    ),
}


def write_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "notes_latin1.txt").write_bytes("café payments à refund\n".encode("latin-1"))
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = write_project(tmp_path / "shop")
    outside = tmp_path / "outside.txt"
    outside.write_text("TOP SECRET outside the project: charge_card\n")
    (root / "outside_link.txt").symlink_to(outside)
    (root / "etc_link").symlink_to(tmp_path)  # a directory link leading out of the root
    return root


@pytest.fixture
def counter() -> EstimateCounter:
    return EstimateCounter()


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``root`` (not following links) with its content hash and mode."""
    found: dict[str, tuple[str, int, int]] = {}
    for current, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(current, name)
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
            found[str(path.relative_to(root))] = (digest, info.st_mode, info.st_mtime_ns)
    return found
