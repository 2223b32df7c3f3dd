"""One redactor of each scan engine, for the tests that must hold with both."""

from __future__ import annotations

import sys

import pytest

from toolctx.redaction import Redactor, default_redactor


@pytest.fixture(scope="module")
def portable() -> Redactor:
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "hyperscan", None)  # as in a core install without toolctx[fast]
        redactor = Redactor()
    assert redactor._prefilter.engine == "re"
    return redactor


@pytest.fixture(params=["hyperscan", "re"])
def redactor(request: pytest.FixtureRequest, portable: Redactor) -> Redactor:
    if request.param == "re":
        return portable
    fast = default_redactor()
    assert fast._prefilter.engine == "hyperscan"
    return fast
