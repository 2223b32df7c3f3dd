"""The exact counter falls back from rs-bpe to tiktoken with the same counts, and says what to install without both."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import unavailable
from tests.tokens.corpora import KINDS, corpus
from tests.tokens.test_exact import KNOWN
from toolctx.errors import ConfigError
from toolctx.tokens import BACKENDS, ENCODINGS, ExactCounter

ROOT = Path(__file__).resolve().parents[2]
# SHA-256 of OpenAI's published vocabularies (tiktoken checks the same).
VOCAB_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def both_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("rs_bpe", "tiktoken", "bpe_openai"))


needs_both = pytest.mark.skipif(
    not both_installed() and not os.environ.get("CI"),
    reason="needs rs-bpe, tiktoken and bpe-openai (the dev dependencies)",
)


@pytest.fixture(scope="module")
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiktoken cache holding OpenAI's vocabularies, from bpe-openai's wheel (tiktoken would download them)."""
    spec = importlib.util.find_spec("bpe_openai")  # (found, not imported: its import warns of a deprecation)
    assert spec is not None
    assert spec.origin is not None
    data_dir = Path(spec.origin).parent / "data"
    folder = tmp_path_factory.mktemp("tiktoken-cache")
    for name, digest in VOCAB_SHA256.items():
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        data = gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == digest
        (folder / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)  # tiktoken's cache key
    return folder


def run(script: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return done.stdout


@needs_both
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_rs_bpe_and_tiktoken_agree_on_every_piece_of_the_corpus(
    encoding: str, tiktoken_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    first = ExactCounter(encoding, backend="rs-bpe")
    second = ExactCounter(encoding, backend="tiktoken")
    assert (first.backend, second.backend) == ("rs-bpe", "tiktoken")
    pieces = [piece for kind in KINDS for piece in corpus(kind)] + [text for text, *_ in KNOWN]
    assert len(pieces) > 500
    differing = [piece[:80] for piece in pieces if first.count(piece) != second.count(piece)]
    assert differing == []
    long_text = "def f(x):\n    return x + 1\n" * 50_000  # past bpe-openai's one-million-character limit
    assert first.count(long_text) == second.count(long_text)


@needs_both
def test_without_rs_bpe_tiktoken_counts_and_says_so(tiktoken_cache: Path) -> None:
    script = (
        "import sys; sys.modules['rs_bpe'] = None\n"
        "from toolctx.tokens import get_counter\n"
        "counter = get_counter('o200k_base')\n"
        "print(counter.backend, counter.count('東京は日本の首都です。'), get_counter('cl100k_base').count('👍🏽'))\n"
    )
    assert run(script, TIKTOKEN_CACHE_DIR=str(tiktoken_cache)).split() == ["tiktoken", "8", "6"]


def test_with_rs_bpe_installed_it_counts_first() -> None:
    if importlib.util.find_spec("rs_bpe") is None:
        unavailable("rs-bpe is not installed (no wheel for this Python)")
    assert ExactCounter("cl100k_base").backend == BACKENDS[0] == "rs-bpe"


def test_without_either_library_the_error_names_both_and_the_extra() -> None:
    script = (
        "import sys; sys.modules['rs_bpe'] = None; sys.modules['tiktoken'] = None\n"
        "from toolctx.tokens import get_counter, resolve_counter\n"
        "print(type(resolve_counter(None)).__name__)\n"  # the estimate stands in where None asked for the best
        "try:\n    get_counter('cl100k_base')\n"
        "except ImportError as e:\n    print(e.name, '|', e)\n"
    )
    first, second = run(script).splitlines()
    assert first == "EstimateCounter"
    assert second.startswith("rs_bpe | counting cl100k_base tokens exactly needs rs-bpe or tiktoken (rs-bpe: ")
    assert "pip install 'toolctx[tokens]'" in second
    assert "get_counter('estimate')" in second


def test_tiktoken_without_its_vocabulary_is_a_clear_error(tmp_path: Path) -> None:
    if importlib.util.find_spec("tiktoken") is None:
        unavailable("tiktoken is not installed")
    script = (
        "import tiktoken.load\n"
        "def offline(*args, **kwargs):\n    raise ConnectionError('no network')\n"
        "tiktoken.load.read_file = offline\n"
        "from toolctx.tokens import ExactCounter\n"
        "try:\n    ExactCounter('o200k_base', backend='tiktoken')\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = run(script, TIKTOKEN_CACHE_DIR=str(tmp_path))
    assert "tiktoken could not load the o200k_base vocabulary (ConnectionError: no network)" in out
    assert "TIKTOKEN_CACHE_DIR" in out


def test_an_unknown_backend_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown backend 'hf': ExactCounter counts with rs-bpe, tiktoken"):
        ExactCounter("o200k_base", backend="hf")


def test_the_tokens_extra_installs_a_counter_on_every_python() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert sorted(extras["tokens"]) == [
        "rs-bpe>=0.1; python_version < '3.14'",  # its one release has wheels up to 3.13
        "tiktoken>=0.7; python_version >= '3.14'",
    ]
