"""The names of files that hold credentials: kept out of a fresh context unless asked for."""

from __future__ import annotations

import fnmatch
import re

__all__ = ["SECRET_FILE_PATTERNS", "secret_pattern"]

#: File names (glob patterns on the last path component, compared without regard to case) that a fresh
#: context leaves out unless ``include_secret_files`` is set, even when no ``.gitignore`` excludes them.
#: Drawn from what secret scanners flag by file name (gitleaks, gitrob/shhgit's file signatures) and
#: GitHub's gitignore templates: dotenv files, private keys and keystores, SSH keys, and the
#: credential files of package managers and tools.
SECRET_FILE_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".htpasswd",
    ".dockercfg",
    ".s3cfg",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "credentials.xml",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    "*.tfvars",
)

#: Endings of templates that document a credentials file without holding one (``.env.example``):
#: these stay in, since a task that configures the project needs them.
TEMPLATE_ENDINGS: tuple[str, ...] = (".example", ".sample", ".template", ".dist")

_MATCHERS = [(pattern, re.compile(fnmatch.translate(pattern))) for pattern in SECRET_FILE_PATTERNS]
_ANY = re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in SECRET_FILE_PATTERNS))


def secret_pattern(path: str) -> str | None:
    """The pattern of :data:`SECRET_FILE_PATTERNS` the name of ``path`` matches, or None (never for a template)."""
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    if name.endswith(TEMPLATE_ENDINGS) or _ANY.match(name) is None:
        return None
    return next(pattern for pattern, matcher in _MATCHERS if matcher.match(name))
