"""The project files a file imports, found from its import lines (Python and JavaScript/TypeScript).

Only imports that name a file of the project count; a package from elsewhere
resolves to nothing. This is a reading of import statements, not an import: no
code of the project runs.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection

__all__ = ["local_imports"]

_PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([\w \t,*]+))", re.M)
_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.M)
_JS_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"](\.{1,2}/[^'"]+)['"]""")
_JS_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", "/index.ts", "/index.tsx", "/index.js")
_PY_ROOTS = ("", "src/", "lib/")


def _python_module(module: str, known: Collection[str]) -> str | None:
    base = module.replace(".", "/")
    for root in _PY_ROOTS:
        for candidate in (f"{root}{base}.py", f"{root}{base}/__init__.py"):
            if candidate in known:
                return candidate
    return None


def _python(path: str, text: str, known: Collection[str]) -> list[str]:
    found: list[str] = []
    package = posixpath.dirname(path)
    for dots, module, grouped, listed in _PY_FROM.findall(text):
        names = (grouped or listed).replace("\n", " ")
        if dots:
            base = package
            for _ in range(len(dots) - 1):
                base = posixpath.dirname(base)
            prefix = f"{base}/{module.replace('.', '/')}" if module else base
            prefix = prefix.strip("/")
            # The submodules a name list imports, else the module the names come from.
            subs = [f"{prefix}/{n.strip()}.py" for n in names.split(",") if n.strip() not in ("", "*")]
            hits = [t for t in subs if t in known] or [
                t for t in (f"{prefix}.py", f"{prefix}/__init__.py") if t in known
            ]
            found.extend(hits)
            continue
        hit = _python_module(module, known)
        if hit is not None:
            found.append(hit)
        for name in names.split(","):
            sub = _python_module(f"{module}.{name.strip()}", known) if name.strip() not in ("", "*") else None
            if sub is not None:
                found.append(sub)
    for modules in _PY_IMPORT.findall(text):
        for module in modules.split(","):
            hit = _python_module(module.strip(), known)
            if hit is not None:
                found.append(hit)
    return found


def _javascript(path: str, text: str, known: Collection[str]) -> list[str]:
    found = []
    folder = posixpath.dirname(path)
    for spec in _JS_IMPORT.findall(text):
        base = posixpath.normpath(posixpath.join(folder, spec))
        for suffix in _JS_SUFFIXES:
            if base + suffix in known:
                found.append(base + suffix)
                break
    return found


def local_imports(path: str, text: str, known: Collection[str]) -> list[str]:
    """The files of ``known`` (root-relative paths) that ``path`` imports, in order, each once."""
    if path.endswith((".py", ".pyi")):
        found = _python(path, text, known)
    elif path.endswith((".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs")):
        found = _javascript(path, text, known)
    else:
        return []
    return [p for p in dict.fromkeys(found) if p != path]
