"""A blob store in object storage (S3 and S3-compatible services, GCS, Azure; memory for tests).

Reached through obstore (``pip install 'toolctx[s3]'``), chosen over fsspec/s3fs
after ``bench/object_stores.py`` measured both on the same S3 endpoint: a request
takes 0.36-0.59 of s3fs's time at the median (puts, gets, ranged gets, listings),
and obstore has a real conditional create (``If-None-Match``) where s3fs has none,
ranged reads, and retries and timeouts of its own.

One store holds one session's blobs under ``<url>/<session id>/``. The URL names
the service, bucket and prefix (``s3://bucket/prefix``, ``gs://...``, ``az://...``,
``memory:///``; a local folder is a :class:`LocalStore`, which locks it); endpoint, credentials and region come from the
provider's usual environment variables and credential chain (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``
for a plain-http endpoint), or from ``options`` given by keyword (obstore's
``from_url`` options). A request that cannot reach the service is retried three
times within ten seconds: an unreachable store costs a tool call seconds, and its
output is then shown whole.

- ``put`` is one atomic PUT: a reader sees the whole object or none.
- Object storage has no append. ``append`` (the session's manifest) reads the
  object and writes it back only if nobody changed it meanwhile (a conditional
  PUT on its ETag, or a create that fails if another worker created it first),
  and tries again otherwise, after a random pause that grows: workers appending
  to one manifest at once all land.
- ``create`` (a stored output, written once) is one PUT with ``If-None-Match``: an
  object is never replaced; the same bytes there already (a write retried after it
  landed) are a success.
- ``head`` and ``read_range`` are one ranged GET each.
- Failures of the service are :class:`~toolctx.StorageError` (an ``OSError``),
  a missing object ``FileNotFoundError``, as with every store.
"""

from __future__ import annotations

import builtins
import errno
import importlib
import os
import random
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from toolctx._naming import validate_session_id
from toolctx.errors import ConfigError, StorageError
from toolctx.storage._base import BlobStore, check_name, raise_exists

__all__ = ["ObjectStore", "display_url", "is_store_url"]

_SCHEMES = frozenset({"s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "memory", "http", "https"})
# An unreachable store costs a tool call a few seconds at most (then its output is shown whole), not obstore's
# default of ten retries over three minutes; a ``retry_config`` given by keyword wins.
_RETRY = {
    "max_retries": 3,
    "retry_timeout": timedelta(seconds=10),
    "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=2), "base": 2},
}
_APPEND_TRIES = 100
_BACKOFF = 0.005  # seconds before the second try of an append; doubled each time, at most 0.25, with jitter


def display_url(url: str) -> str:
    """A store URL as messages and ``repr()`` show it: without the user, password or query string (a SAS
    token, say) it may carry."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def is_store_url(value: object) -> bool:
    """Whether ``value`` is a URL naming an object store (``s3://bucket/prefix`` and the like)."""
    return isinstance(value, str) and urlsplit(value).scheme in _SCHEMES


def _obstore() -> Any:
    try:
        return importlib.import_module("obstore")
    except ImportError:
        raise ConfigError(
            "a store URL needs obstore: pip install 'toolctx[s3]' (it reaches S3, GCS, Azure and local folders)"
        ) from None


_BRIEF_CHARS = 600  # of an object store client's error in a message (its debug dump repeats the request)


def _brief(exc: Exception) -> str:
    """What went wrong, said briefly: the client's message without its debug dump, and what to do where the
    cause is a known setting."""
    text = str(exc).partition("\n\nDebug source:")[0].strip()
    text = text if len(text) <= _BRIEF_CHARS else text[:_BRIEF_CHARS] + " [...]"
    if "BadScheme" in str(exc):  # (an http:// endpoint, refused unless allowed)
        text += "; an endpoint over plain http:// needs AWS_ALLOW_HTTP=true"
    return text


class ObjectStore(BlobStore):
    """Blobs of session ``session_id`` as objects under ``url`` (see the module docstring)."""

    shared = True  # (any worker reaching the store may serve the session: see BlobStore.shared)

    def __init__(self, url: str, session_id: str, **options: Any) -> None:
        if isinstance(url, str) and url.startswith("file:"):
            raise ConfigError(f"{url!r:.120} is a local folder: give it as the context_dir, not as an object store URL")
        if not is_store_url(url):
            raise ConfigError(
                f"store must be an object store URL such as 's3://bucket/prefix', got {url!r:.120}; "
                f"supported schemes: {', '.join(sorted(_SCHEMES))}"
            )
        self.url = url.rstrip("/")
        self.session_id = validate_session_id(session_id)
        obstore = self._obstore = _obstore()
        self._store = _client(obstore, self.url, options)
        # (obstore raises the built-in FileNotFoundError for a missing object, its own NotFoundError elsewhere)
        self._missing = (obstore.exceptions.NotFoundError, FileNotFoundError)
        self._exists = obstore.exceptions.AlreadyExistsError
        self._changed = (obstore.exceptions.PreconditionError, *self._missing)  # (changed, or deleted, meanwhile)

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r}, {self.session_id!r})"

    def display_location(self) -> str:
        return f"{display_url(self.url)}/{self.session_id}"

    def _key(self, name: str) -> str:
        return f"{self.session_id}/{check_name(name)}"

    def _failed(self, action: str, name: str, exc: Exception) -> StorageError:
        return StorageError(errno.EIO, f"could not {action} blob {name!r} in {self.display_location()}: {_brief(exc)}")

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        key = self._key(name)
        try:
            self._obstore.put(self._store, key, b"".join(chunks))
        except Exception as exc:
            raise self._failed("write", name, exc) from exc

    def create(self, name: str, chunks: Sequence[bytes]) -> None:
        key, data = self._key(name), b"".join(chunks)
        try:
            self._obstore.put(self._store, key, data, mode="create")  # (If-None-Match: one atomic request)
        except self._exists:
            if self.get(name) != data:  # (the same bytes: a write retried after it landed)
                raise_exists(name, f"{self.url}/{self.session_id}")
        except Exception as exc:
            raise self._failed("write", name, exc) from exc

    def read_range(self, name: str, start: int, end: int) -> bytes:
        key = self._key(name)
        if end <= start:
            self.head(name, 0)  # (still says whether it is there)
            return b""
        try:
            return bytes(self._obstore.get_range(self._store, key, start=start, end=end))
        except self._missing:
            raise FileNotFoundError(errno.ENOENT, f"no blob {name!r} in {self.url}/{self.session_id}") from None
        except Exception as exc:
            if _empty_range(exc):
                return self.get(name)[start:end]  # (a range starting past the end)
            raise self._failed("read", name, exc) from exc

    def get(self, name: str) -> bytes:
        key = self._key(name)
        try:
            return bytes(self._obstore.get(self._store, key).bytes())
        except self._missing:
            raise FileNotFoundError(errno.ENOENT, f"no blob {name!r} in {self.url}/{self.session_id}") from None
        except Exception as exc:
            raise self._failed("read", name, exc) from exc

    def head(self, name: str, size: int) -> bytes:
        key = self._key(name)
        if size <= 0:
            self.get(name)  # (still says whether it is there)
            return b""
        try:
            return bytes(self._obstore.get_range(self._store, key, start=0, length=size))
        except self._missing:
            raise FileNotFoundError(errno.ENOENT, f"no blob {name!r} in {self.url}/{self.session_id}") from None
        except Exception as exc:
            if _empty_range(exc):
                return self.get(name)[:size]  # (an empty object has no first byte to range over)
            raise self._failed("read", name, exc) from exc

    def delete(self, name: str) -> bool:
        key = self._key(name)
        try:
            self._obstore.head(self._store, key)
        except self._missing:
            return False
        except Exception as exc:
            raise self._failed("delete", name, exc) from exc
        try:
            self._obstore.delete(self._store, key)
        except Exception as exc:
            raise self._failed("delete", name, exc) from exc
        return True

    def list(self) -> list[str]:
        prefix = f"{self.session_id}/"
        try:
            found = [meta["path"] for batch in self._obstore.list(self._store, prefix=prefix) for meta in batch]
        except Exception as exc:
            raise self._failed("list", "*", exc) from exc
        return [path[len(prefix) :] for path in found if path.startswith(prefix) and "/" not in path[len(prefix) :]]

    def append(self, name: str, data: bytes) -> None:
        key = self._key(name)
        obstore = self._obstore
        try:
            for attempt in range(_APPEND_TRIES):
                if attempt:  # (others appending at the same moment: let them through, at random offsets)
                    time.sleep(random.uniform(0, min(0.25, _BACKOFF * 2**attempt)))
                try:
                    found = obstore.get(self._store, key)
                except self._missing:
                    try:
                        obstore.put(self._store, key, data, mode="create")
                        return
                    except self._exists:
                        continue  # another worker created it first: append to theirs
                meta = found.meta
                version = {"e_tag": meta["e_tag"]} if meta.get("version") is None else {"version": meta["version"]}
                try:
                    obstore.put(self._store, key, bytes(found.bytes()) + data, mode=version)
                    return
                except self._changed:
                    continue  # changed (or deleted) meanwhile: read it again
        except Exception as exc:
            raise self._failed("append to", name, exc) from exc
        raise StorageError(errno.EBUSY, f"could not append to blob {name!r}: it kept changing ({_APPEND_TRIES} tries)")

    def get_state(self, name: str) -> bytes | None:
        try:
            return self.get(f"state-{name}")
        except FileNotFoundError:
            return None

    def put_state(self, name: str, data: bytes) -> None:
        self.put(f"state-{name}", [data])

    def close(self, *, remove: bool = False) -> None:
        if remove:
            self.remove_all()

    def remove_all(self) -> int:
        """Delete every object of the session, a thousand per request; returns how many there were."""
        prefix = f"{self.session_id}/"
        try:
            found = [meta["path"] for batch in self._obstore.list(self._store, prefix=prefix) for meta in batch]
            for start in range(0, len(found), 1000):
                self._obstore.delete(self._store, found[start : start + 1000])
        except Exception as exc:
            raise self._failed("delete", "*", exc) from exc
        return len(found)

    def remove_paths(self, paths: Sequence[str]) -> None:
        """Delete objects under the store's URL by their paths (``<session id>/<name>``), a thousand per request;
        paths of no object are passed over."""
        for path in paths:
            session_id, _, name = path.partition("/")
            validate_session_id(session_id)
            check_name(name)
        try:
            for start in range(0, len(paths), 1000):
                self._obstore.delete(self._store, list(paths[start : start + 1000]))
        except Exception as exc:
            raise self._failed("delete", "*", exc) from exc

    def newest(self) -> float | None:
        """When the session's newest object was written (UNIX seconds); None if it has none."""
        prefix = f"{self.session_id}/"
        try:
            times = [m["last_modified"] for batch in self._obstore.list(self._store, prefix=prefix) for m in batch]
        except Exception as exc:
            raise self._failed("list", "*", exc) from exc
        return max(t.timestamp() for t in times) if times else None

    def sessions(self) -> builtins.list[str]:
        """The ids of every session with objects under the store's URL, this one's or not (for a sweep)."""
        try:
            found = self._obstore.list_with_delimiter(self._store)
        except Exception as exc:
            raise self._failed("list", "*", exc) from exc
        return [str(prefix).rstrip("/").rpartition("/")[2] for prefix in found["common_prefixes"]]


_clients: dict[str, Any] = {}  # url and environment -> the obstore client the sessions under it share
_clients_lock = threading.Lock()


def _client(obstore: Any, url: str, options: dict[str, Any]) -> Any:
    """The obstore client for ``url``: one per URL in a process when no options are given (a session each
    would open connections of its own, a TLS handshake apiece), a new one otherwise."""
    shared = not options
    # (the provider's variables name the endpoint and credentials: a client made under others is another one)
    key = repr((url, sorted(i for i in os.environ.items() if i[0].startswith(("AWS_", "GOOGLE_", "AZURE_")))))
    if shared:
        with _clients_lock:
            found = _clients.get(key)
        if found is not None:
            return found
    options = {**options, "retry_config": {**_RETRY, **options.get("retry_config", {})}}
    try:
        made = obstore.store.from_url(url, **options)
    except Exception as exc:  # (obstore's own errors for a URL or option it cannot use)
        raise ConfigError(f"cannot open the object store {url!r}: {exc}") from None
    if shared:
        with _clients_lock:
            made = _clients.setdefault(key, made)
    return made


def _forget_clients() -> None:
    global _clients_lock
    _clients.clear()  # (a forked child opens connections of its own)
    _clients_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_clients)


def _empty_range(exc: Exception) -> bool:
    return "range" in str(exc).lower() and "not satisfiable" in str(exc).lower()
