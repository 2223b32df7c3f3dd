"""What someone adopting toolctx sees of the installed distribution: licence, metadata, types, a quiet library."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PACKAGES = ["toolctx", "toolctx_langchain", "toolctx_openai_agents"]


def requirements(extra: str | None = None) -> dict[str, Requirement]:
    """The distribution's requirements that apply with ``extra`` (None: the core install), by name."""
    found: dict[str, Requirement] = {}
    for line in importlib.metadata.requires("toolctx") or []:
        req = Requirement(line)
        if req.marker is None if extra is None else req.marker is not None and req.marker.evaluate({"extra": extra}):
            found[req.name.lower()] = req
    return found


def test_the_licence_is_mit_and_ships_with_the_package() -> None:
    dist = importlib.metadata.distribution("toolctx")
    assert dist.metadata["License-Expression"] == "MIT"
    assert dist.metadata.get_all("License-File") == ["LICENSE"]
    licence = dist.read_text("licenses/LICENSE")
    assert licence is not None
    assert licence.startswith("MIT License")
    assert "toolctx developers" in licence


def test_classifiers_name_the_supported_pythons() -> None:
    classifiers = importlib.metadata.metadata("toolctx").get_all("Classifier") or []
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert "Typing :: Typed" in classifiers
    # PEP 639: the licence expression replaces licence classifiers; builders refuse both at once.
    assert not [c for c in classifiers if c.startswith("License ::")]


def test_the_core_install_pulls_no_numerics_or_regex_engine() -> None:
    core = requirements()
    assert {"pydantic", "structlog", "xxhash", "orjson", "wrapt"} <= set(core)
    assert "numpy" not in core
    assert "hyperscan" not in core


@pytest.mark.parametrize("extra", ["memory", "postgres", "server", "dev"])
def test_the_extras_that_compute_scores_bring_numpy(extra: str) -> None:
    assert "numpy" in requirements(extra)


@pytest.mark.parametrize("extra", ["fast", "dev"])
def test_the_accelerator_extra_brings_hyperscan(extra: str) -> None:
    assert "hyperscan" in requirements(extra)


def test_the_postgres_extra_leaves_the_psycopg_build_to_the_application() -> None:
    psycopg = requirements("postgres")["psycopg"]
    assert psycopg.extras == set()
    assert "psycopg-binary" not in requirements("postgres")
    assert "binary" in requirements("dev")["psycopg"].extras  # the tests still get a driver


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_declares_its_inline_types(package: str) -> None:
    assert importlib.resources.files(package).joinpath("py.typed").is_file()


def run_fresh(code: str, context_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    env["TOOLCTX_CONTEXT_DIR"] = str(context_dir)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


UNSTORABLE = """
    import logging, os, sys, pathlib
    import toolctx

    if sys.argv[1:] == ["configured"]:
        logging.basicConfig(format="LOGGED %(name)s %(levelname)s %(message)s")
    blocker = pathlib.Path(os.environ["TOOLCTX_CONTEXT_DIR"], "not-a-dir")
    blocker.write_text("a file where the context directory should be")

    @toolctx.persist_context
    def fetch() -> str:
        return "x" * 50_000

    with toolctx.session(blocker / "ctx"):
        assert fetch() == "x" * 50_000
    print("tool result intact")
"""


def test_without_logging_configured_a_failure_shows_only_its_warning(tmp_path: Path) -> None:
    done = run_fresh(UNSTORABLE, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tool result intact\n"
    # The warning (its line, then the source line it points at, indented) and nothing from
    # Python's last-resort log handler.
    first, *rest = done.stderr.splitlines()
    assert "ToolctxWarning: could not store the output of tool 'fetch'" in first
    assert all(line.startswith("  ") for line in rest), done.stderr
    assert "internal_error" not in done.stderr


def test_an_application_that_configures_logging_gets_the_record(tmp_path: Path) -> None:
    done = run_fresh(UNSTORABLE, tmp_path, "configured")
    assert done.returncode == 0, done.stderr
    logged = [line for line in done.stderr.splitlines() if line.startswith("LOGGED")]
    assert len(logged) == 1
    assert logged[0].startswith("LOGGED toolctx WARNING event='internal_error'")
    assert "ToolctxWarning" in done.stderr


WITHOUT_ACCELERATORS = """
    import sys

    sys.modules["numpy"] = None  # as if not installed: importing them raises ImportError
    sys.modules["hyperscan"] = None
    import toolctx

    @toolctx.persist_context
    def fetch_report(ticker: str) -> str:
        return f"{ticker} annual revenue " + "x" * 100 * 1024

    @toolctx.persist_context
    def lookup_price(ticker: str) -> dict:
        return {"ticker": ticker, "price": 123.4}

    with toolctx.session() as s:
        big, small = fetch_report("AAPL"), lookup_price("AAPL")
        pointers = s.get_all_pointers()
        print([p.storage.value for p in pointers])
        print([c.result for c in s.load_contexts(pointers)] == [big, small])
"""


def test_the_core_works_without_numpy_and_hyperscan(tmp_path: Path) -> None:
    done = run_fresh(WITHOUT_ACCELERATORS, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['disk', 'memory']", "True"]
    assert done.stderr == ""


def test_the_source_distribution_carries_the_docs_examples_and_where_to_read_them(tmp_path: Path) -> None:
    """What the README and the report name by path ships in the sdist; the metadata names the docs and changelog."""
    import tarfile

    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path)],
        cwd=root, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (sdist,) = tmp_path.glob("toolctx-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        info = archive.extractfile(next(n for n in archive.getnames() if n.endswith("/PKG-INFO")))
        assert info is not None
        metadata = info.read().decode()
    for path in ("README.md", "CHANGELOG.md", "docs/index.md", "docs/getting-started.md", "docs/benchmarks.md",
                 "bench/HISTORY.md", "examples/langchain_agent.py", "examples/openai_agents_agent.py"):  # fmt: skip
        assert path in names, f"{path} is not in the source distribution"
    assert not any(name.startswith("docs/_build/") for name in names), "a local docs build was packaged"
    assert "Project-URL: Documentation, " in metadata
    assert "Project-URL: Changelog, " in metadata
