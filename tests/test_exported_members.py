from __future__ import annotations

import subprocess
import sys

import toolctx


def test_all_is_sorted_and_complete() -> None:
    assert toolctx.__all__ == sorted(toolctx.__all__)
    public = {name for name in dir(toolctx) if not name.startswith("_") and not _is_module(name)}
    assert public <= set(toolctx.__all__) | {"annotations"}
    for name in toolctx.__all__:
        assert hasattr(toolctx, name), name


def _is_module(name: str) -> bool:
    return type(getattr(toolctx, name)).__name__ == "module"


def test_version_comes_from_the_installed_metadata() -> None:
    from importlib.metadata import version

    assert toolctx.__version__ == version("toolctx")


def test_import_loads_no_framework_or_driver_and_touches_no_disk(tmp_path) -> None:
    script = (
        "import sys, toolctx\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "{'langchain', 'langchain_core', 'agents', 'openai', 'sqlalchemy', 'psycopg', 'fastapi', 'uvicorn', 'numpy',"
        " 'rs_bpe'}]\n"
        "print(heavy)\n"
    )
    env = {"HOME": str(tmp_path / "home"), "TOOLCTX_CONTEXT_DIR": str(tmp_path / "ctx"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert out.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_the_compaction_memory_and_server_packages_export_sorted_names_that_exist() -> None:
    import toolctx.compaction
    import toolctx.memory
    import toolctx.server

    for package in (toolctx.compaction, toolctx.memory, toolctx.server):
        # Constants first, then the rest in order (ruff's isort-style order).
        assert package.__all__ == sorted(package.__all__, key=lambda name: (not name.isupper(), name))
        for name in package.__all__:
            assert hasattr(package, name), (package.__name__, name)


PUBLIC_MODULES = {
    "toolctx",
    "toolctx.assembly",
    "toolctx.cli",
    "toolctx.cli.__main__",
    "toolctx.compaction",
    "toolctx.diagnostics",
    "toolctx.errors",
    "toolctx.fresh",
    "toolctx.index",
    "toolctx.memory",
    "toolctx.models",
    "toolctx.redaction",
    "toolctx.selection",
    "toolctx.server",
    "toolctx.server.__main__",
    "toolctx.sessions",
    "toolctx.storage",
    "toolctx.telemetry",
    "toolctx.telemetry.events",
    "toolctx.testing",
    "toolctx.tokens",
}


def test_every_module_outside_the_public_ones_is_private() -> None:
    """A reader can tell the API from the name: anything else starts with an underscore."""
    import pkgutil

    names = {"toolctx"} | {m.name for m in pkgutil.walk_packages(toolctx.__path__, "toolctx.")}
    public = {n for n in names if not any(part.startswith("_") and part != "__main__" for part in n.split("."))}
    assert public == PUBLIC_MODULES
