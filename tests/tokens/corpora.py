"""Fixed corpora of real text from the Python installation, for checking the estimate per kind.

Code is the standard library's own source, CJK and other scripts are Sphinx's
translations (``sphinx`` is a dev dependency), JSON is the standard library's
data dumped as JSON, and ids are derived deterministically from hashes and
encodings. Pieces are cut at line ends into sizes from 200 bytes to 8 KiB.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import sysconfig
import uuid
from pathlib import Path

__all__ = ["KINDS", "corpus"]

KINDS = ("code", "json", "ids", "cjk", "non-latin", "prose")
_STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _pieces(text: str, rnd: random.Random, low: int = 200, high: int = 8192) -> list[str]:
    out: list[str] = []
    lines: list[str] = []
    size = 0
    target = int(low * (high / low) ** rnd.random())
    for line in text.splitlines(keepends=True):
        lines.append(line)
        size += len(line.encode())
        if size >= target:
            out.append("".join(lines))
            lines, size = [], 0
            target = int(low * (high / low) ** rnd.random())
    return out


def _po_translations(language: str) -> str:
    import sphinx

    path = Path(sphinx.__file__).parent / "locale" / language / "LC_MESSAGES" / "sphinx.po"
    found = re.findall(r'^msgstr "(.+)"$', path.read_text(encoding="utf-8"), re.MULTILINE)
    return "\n".join(found)


def _docstrings() -> str:
    import ast

    out = []
    for path in sorted(_STDLIB.glob("[a-m]*.py"))[:40]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Module):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 200:
                    out.append(doc)
    return "\n\n".join(out)


def corpus(kind: str, limit: int = 150) -> list[str]:
    """Up to ``limit`` pieces of one kind, the same on every run."""
    rnd = random.Random(kind)
    pieces: list[str] = []
    if kind == "code":
        for path in sorted(_STDLIB.glob("*.py"))[:60]:
            pieces += _pieces(path.read_text(encoding="utf-8"), rnd)
    elif kind == "prose":
        pieces = _pieces(_docstrings(), rnd)
    elif kind == "json":
        import keyword
        import unicodedata

        tables = {"keywords": keyword.kwlist, "version": unicodedata.unidata_version}
        data = [
            {"name": p.name, "size": len(p.name) * 37, "parts": p.stem.split("_"), "table": tables}
            for p in sorted(_STDLIB.glob("*.py"))
        ]
        pieces = _pieces(json.dumps(data, indent=2), rnd) + [json.dumps(data[i : i + 12]) for i in range(0, 200, 12)]
    elif kind == "ids":
        for i in range(limit):
            size = int(40 * 60 ** rnd.random())
            blob = rnd.randbytes(size * 3)
            pieces.append(
                [
                    base64.b64encode(blob).decode(),
                    "\n".join(hashlib.sha256(blob[j : j + 8]).hexdigest() for j in range(0, len(blob), 48)),
                    json.dumps(
                        [str(uuid.UUID(bytes=blob[j : j + 16].ljust(16, b"\0"))) for j in range(0, len(blob), 32)]
                    ),
                ][i % 3]
            )
    elif kind == "cjk":
        for language in ("zh_CN", "ja", "ko", "zh_TW"):
            pieces += _pieces(_po_translations(language), rnd, high=3000)
    elif kind == "non-latin":
        for language in ("ru", "el", "ar", "hi", "uk_UA", "he", "bg"):
            pieces += _pieces(_po_translations(language), rnd, high=3000)
    else:
        raise ValueError(f"unknown kind {kind!r}: use one of {KINDS}")
    rnd.shuffle(pieces)
    return pieces[:limit]
