"""The supported LangChain and Agents SDK releases: declared in pyproject.toml and tested at both ends.

The ``dev`` extra resolves to the newest releases in range, and the whole suite runs
on them. The oldest end: ``scripts/oldest-frameworks`` builds a cached virtualenv
with the releases pinned in ``scripts/oldest-frameworks.txt`` (the extras' lower
bounds) and the adapters' real-loop tests run there. Building it takes minutes the
first time, so that test runs under CI (``CI=true``) or with
``TOOLCTX_TEST_OLDEST=1``, and skips otherwise.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "oldest-frameworks"
FRAMEWORK_EXTRAS = ("langchain", "openai-agents")


def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("oldest_frameworks", str(SCRIPT))
    spec = importlib.util.spec_from_loader("oldest_frameworks", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _extras() -> dict[str, list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {name: [Requirement(r) for r in reqs] for name, reqs in project["optional-dependencies"].items()}


def _pinned() -> dict[str, Version]:
    found: dict[str, Version] = {}
    for line in _script().pins():
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{line!r} in {SCRIPT.name}.txt must pin one release with =="
        found[req.name] = Version(spec.version)
    return found


def _bound(req: Requirement, operator: str) -> Version | None:
    return next((Version(s.version) for s in req.specifier if s.operator == operator), None)


def test_every_framework_requirement_is_a_closed_range_from_the_tested_oldest_release() -> None:
    extras, pinned = _extras(), _pinned()
    for extra in FRAMEWORK_EXTRAS:
        assert extras[extra], f"the {extra} extra lists no framework"
        for req in extras[extra]:
            low, high = _bound(req, ">="), _bound(req, "<")
            assert low is not None, f"{extra}: {req} needs a >= bound (the oldest tested release)"
            assert high is not None, f"{extra}: {req} needs a < bound (the next release that may break it)"
            assert pinned.get(req.name) == low, (
                f"{extra}: {req} starts at {low}, but scripts/oldest-frameworks.txt tests "
                f"{req.name} {pinned.get(req.name)}: make them agree"
            )
            assert high > low


def test_the_dev_extra_asks_for_the_same_ranges() -> None:
    extras = _extras()
    dev = {req.name: req for req in extras["dev"]}
    for extra in FRAMEWORK_EXTRAS:
        for req in extras[extra]:
            assert req.name in dev, f"the dev extra does not install {req.name}, so its tests would skip"
            assert dev[req.name].specifier == req.specifier, f"dev has {dev[req.name]}, the {extra} extra has {req}"


def test_the_frameworks_this_suite_runs_on_are_in_the_declared_range() -> None:
    for extra in FRAMEWORK_EXTRAS:
        for req in _extras()[extra]:
            try:
                installed = version(req.name)
            except PackageNotFoundError:
                pytest.fail(f"{req.name} is not installed: pip install -e '.[dev]'")
            assert req.specifier.contains(installed, prereleases=True), (
                f"{req.name} {installed} is outside the supported range {req.specifier}"
            )


def _oldest_requested() -> bool:
    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return ci or os.environ.get("TOOLCTX_TEST_OLDEST", "") == "1"


def _clean_env() -> dict[str, str]:
    """The environment minus this run's pytest, coverage and virtualenv settings."""
    dropped = ("PYTEST_", "COV_CORE_", "VIRTUAL_ENV", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if not k.startswith(dropped)}


@pytest.mark.skipif(
    not _oldest_requested(),
    reason="the oldest supported frameworks are tested under CI or with TOOLCTX_TEST_OLDEST=1 "
    "(the first run builds a virtualenv in ~/.cache/toolctx-test: a few minutes)",
)
def test_the_adapters_pass_on_the_oldest_supported_releases(tmp_path: Path) -> None:
    script, env = _script(), _clean_env()
    built = subprocess.run(
        [sys.executable, str(SCRIPT), "--venv"],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert built.returncode == 0, f"could not build the oldest-frameworks virtualenv:\n{built.stdout}\n{built.stderr}"
    python = Path(built.stdout.strip().splitlines()[-1]) / "bin" / "python"

    pinned = {name: str(v) for name, v in _pinned().items()}
    probe = f"import json, importlib.metadata as m; print(json.dumps({{n: m.version(n) for n in {sorted(pinned)!r}}}))"
    installed = subprocess.run([str(python), "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert json.loads(installed.stdout) == pinned

    report = tmp_path / "oldest.xml"
    command = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", f"--junitxml={report}"]
    ran = subprocess.run(
        [*command, *script.TESTS], check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800
    )
    output = (ran.stdout + ran.stderr)[-6000:]
    assert ran.returncode == 0, f"the adapters' tests fail on the oldest supported releases {pinned}:\n{output}"
    suite = ET.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
    assert counts["tests"] >= 40, f"only {counts['tests']} tests ran on the oldest releases:\n{output}"
    assert counts == {"tests": counts["tests"], "failures": 0, "errors": 0, "skipped": 0}, output
