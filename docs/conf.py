"""Sphinx configuration: the toolctx documentation site (``make docs``).

The API reference is generated from the docstrings and documents every object
under its public import path (``toolctx.ContextSession``, not the module that
defines it). Builds run in nitpicky mode, so every cross-reference that does not
resolve is an error; ``tests/test_docs.py`` builds the site the same way.
``_ext/public_api.py`` says which references are settled on the way.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "toolctx"
author = "toolctx developers"
copyright = "toolctx developers"

try:
    from importlib.metadata import version as _version

    release = _version("toolctx")
except Exception:  # pragma: no cover - a source tree that was never installed
    release = "0.0.0"
version = release

extensions = [
    "sphinx.ext.autodoc",
    "myst_parser",
    "public_api",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Every unresolved reference is an error (with -W); see the module docstring.
nitpicky = True
# Known broken references, each exactly, until the docstrings or exports change:
nitpick_ignore = [
    # SelectionState.candidates is annotated with a class toolctx.selection does not export.
    ("py:class", "Candidates"),
    # LangChain's AgentMiddleware annotates ``tools`` with a name it imports only for type checkers.
    ("py:class", "BaseTool"),
    # A dataclass signature with a ``<factory>`` default is not Python, so Sphinx splits it at every comma,
    # inside CompactionSettings.tool_limits' annotation too.
    ("py:class", "collections.abc.Mapping[str"),
]

# The public modules documented in api/*.rst. Their ``__all__`` is the contract:
# automodule's ``:members:`` documents exactly those names, under the public path.
public_api_modules = [
    "toolctx",
    "toolctx.storage",
    "toolctx.index",
    "toolctx.selection",
    "toolctx.redaction",
    "toolctx.fresh",
    "toolctx.compaction",
    "toolctx.assembly",
    "toolctx.memory",
    "toolctx.server",
    "toolctx.testing",
    "toolctx.diagnostics",
    "toolctx.telemetry",
    "toolctx.telemetry.events",
    "toolctx_langchain",
    "toolctx_openai_agents",
]

autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
}
autodoc_member_order = "bysource"
# Sphinx 9's new autodoc writes parsed annotations back onto pydantic's BaseModel,
# after which no model with ``extra="allow"`` (FastAPI's, the Agents SDK's) can be
# defined (sphinx-doc/sphinx#14337); the class-based implementation does not.
autodoc_use_legacy_class_based = True
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_class_signature = "mixed"
# Pydantic's own machinery is not toolctx's API.
autodoc_inherit_docstrings = False

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"toolctx {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
