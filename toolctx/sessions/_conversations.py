"""Sessions that follow conversations: one kept session per conversation, across turns and processes.

A chat server answers many conversations, each over many turns, often in
different processes. The tool outputs a model was shown as handles in turn 1
must still read back in turn 20 and after a restart, and never from another
conversation. :class:`Conversations` gives each conversation key (a LangGraph
thread id, an Agents SDK session id, a chat id) its own kept session, named
from the key, reopened on every later turn and removed once unused for
``keep_for``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import secrets
import socket
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import xxhash

from toolctx._checks import real_number, whole_number
from toolctx._defaults import resolve_context_dir
from toolctx._internal import internal_error
from toolctx.errors import ConfigError, SessionBusyError, SessionNotFoundError
from toolctx.sessions._gc import gc
from toolctx.sessions._session import ContextSession
from toolctx.sessions._stores import Unreachable, index_for
from toolctx.sessions._turns import Turn, alive
from toolctx.storage import display_url, is_store_url

__all__ = ["Conversations", "conversation_key"]

_PREFIX = "conv-"
_SESSION_OPTIONS = frozenset(
    {
        "threshold",
        "memory_budget",
        "durable",
        "store",
        "index",
        "redact",
        "on_debug",
        "close_timeout",
        "background_uploads",
    }
)


def conversation_key(conversation: object) -> str:
    """The key of ``conversation``: a non-empty string as it is, or the ``session_id`` of a session object.

    An Agents SDK ``Session`` (any object with a string ``session_id``) is
    accepted as it is, so the conversation's own store names the toolctx session.
    """
    key = getattr(conversation, "session_id", conversation) if not isinstance(conversation, str) else conversation
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    if not isinstance(key, str) or not key:
        raise ConfigError(
            f"a conversation is named by a non-empty string (a thread or chat id) or an object with a "
            f"session_id, got {conversation!r:.80}"
        )
    return key


class Conversations:
    """One kept session per conversation, reopened on every turn, in any process, until unused for ``keep_for``.

    ``get(key)`` (or calling the object) returns the conversation's session: the
    one open in this process, else the one a previous turn kept (``resume``), else
    a new one. The session's id is derived from the key (``conv-`` and a 128-bit
    hash), so every process finds it. In a local folder, a conversation open in
    another live process raises :class:`~toolctx.SessionBusyError`; with
    ``store="s3://bucket/prefix"`` (an object store every worker reaches, see
    :class:`ContextSession`) no lock is held, and any worker serves any turn while
    others have the conversation open. Handles read back only in the session that
    stored them, so one conversation never reads another's outputs.

    Use it as the ``session`` of an adapter (``ToolContextMiddleware(session=...)``
    picks the session by the LangGraph thread id), or around a run with
    :meth:`open` (``with conversations.open(sdk_session): await Runner.run(...)``).

    ``context_dir``: where the conversations' sessions live (by default a
    ``conversations`` folder in the usual context directory); conversations not
    used for ``keep_for`` (a timedelta or seconds, 7 days by default) are removed
    from it, with everything else in it that toolctx kept (not yet from an object
    store: the application deletes those objects). At most ``max_open``
    sessions stay open in this process; the least recently used are closed (their
    files stay). Other keyword options are those of :class:`ContextSession`;
    ``threshold`` defaults to 0 here, so every output is on disk once saved.

    With ``index="postgresql://..."`` beside the store (a database every worker
    reaches; ``TOOLCTX_INDEX`` by default), the index lists each conversation's
    calls and expiry, and a turn holds the conversation's **lease**: :meth:`open`
    (and the LangChain middleware, from the run's start to its end) takes it,
    renews it every ``lease / 3`` seconds while the turn runs, and gives it up when
    the turn ends; a turn that shows no sign of life (an adapter's hook) for ten
    minutes, or ten leases if longer, lets it lapse, and an :meth:`open` block that
    takes no call for an hour (a worker hung inside it). A second turn of the same conversation on another worker waits
    up to ``lease_wait`` seconds (``lease`` by default) for it, then raises
    :class:`~toolctx.SessionBusyError`; it never runs without toolctx. A worker
    killed mid-turn holds the conversation ``lease`` seconds (30 by default) at
    most. Expired conversations are removed from the index and the store by a
    background thread, never on a request's path.
    """

    def __init__(
        self,
        context_dir: str | os.PathLike[str] | None = None,
        *,
        keep_for: float | timedelta = timedelta(days=7),
        max_open: int = 64,
        lease: float = 30.0,
        lease_wait: float | None = None,
        **session_options: Any,
    ) -> None:
        unknown = set(session_options) - _SESSION_OPTIONS
        if unknown:
            raise ConfigError(
                f"unknown session option(s) {sorted(unknown)}; Conversations takes {sorted(_SESSION_OPTIONS)}"
            )
        self.context_dir = (
            resolve_context_dir(None) / "conversations" if context_dir is None else resolve_context_dir(context_dir)
        )
        seconds = keep_for.total_seconds() if isinstance(keep_for, timedelta) else keep_for
        self.keep_for = real_number("keep_for (a timedelta or seconds)", seconds, minimum=0.0, unit="seconds")
        self.max_open = whole_number("max_open", max_open, minimum=1, unit="sessions")
        self.lease = real_number("lease", lease, minimum=0.1, unit="seconds")
        wait = self.lease if lease_wait is None else lease_wait
        self.lease_wait = real_number("lease_wait", wait, minimum=0.0, unit="seconds")
        self.index = index_for(session_options)
        self._shared = bool(session_options.get("store") or os.environ.get("TOOLCTX_STORE"))
        if self.index is not None:
            session_options = {**session_options, "index": self.index}
        self._held: dict[str, Turn] = {}  # session id -> its turns under way here
        self._holder = f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._renewer: threading.Thread | None = None
        self._collector: threading.Thread | None = None
        # On disk as soon as saved: a handle shown in this turn must read back after a crash or a restart.
        self._options = {"threshold": 0, **session_options}
        self._open: OrderedDict[str, ContextSession] = OrderedDict()
        self._active: dict[str, int] = {}  # session id -> how many open() blocks use it now
        self._lock = threading.RLock()
        self._last_gc = 0.0
        self._last_sweep = -86_400.0  # (the first collection sweeps too)
        self._pid = os.getpid()
        _register(self)

    def __repr__(self) -> str:
        store = self._store_url("")
        shown = display_url(store) if is_store_url(store) else store or str(self.context_dir)
        return f"<Conversations in {shown!r}, {len(self._open)} open>"

    @staticmethod
    def session_id(conversation: object) -> str:
        """The id of the session that holds ``conversation``'s tool outputs."""
        return _PREFIX + xxhash.xxh3_128_hexdigest(conversation_key(conversation).encode("utf-8", "surrogatepass"))

    def get(self, conversation: object) -> ContextSession:
        """The session of ``conversation`` (a key or a session object), opened, reopened or made as needed."""
        session_id = self.session_id(conversation)
        with self._lock:
            found = self._open.get(session_id)
            if found is not None and not found.closed:
                self._open.move_to_end(session_id)
                return found
            self._collect_if_due()
            try:
                try:
                    found = ContextSession.resume(session_id, self.context_dir, keep=True, **self._options)
                except SessionNotFoundError:
                    found = ContextSession(self.context_dir, session_id=session_id, keep=True, **self._options)
            except (ConfigError, SessionBusyError):
                raise
            except Exception as exc:
                if not self._shared:
                    raise
                # The shared store or index is out of reach: this turn's tools run, their outputs shown whole.
                internal_error(f"could not open conversation session {session_id}; its outputs are shown whole", exc)
                found = ContextSession(self.context_dir, session_id=session_id, store=Unreachable(exc), threshold=0)
                found.conversation = conversation_key(conversation)
                return found  # (not kept open: the next turn tries the store again)
            found.conversation = conversation_key(conversation)
            self._open[session_id] = found
            self._touch(found)
            self._close_least_used()
            return found

    def hold(self, conversation: object) -> ContextSession:
        """Start a turn of ``conversation`` here: take its lease (with an index) and return its session.

        Waits up to ``lease_wait`` seconds while another worker holds it, then raises
        :class:`~toolctx.SessionBusyError`. Turns of one conversation in this process
        share the lease; each :meth:`hold` is ended by one :meth:`release`. Without an
        index it only returns the session. :meth:`open` does both around a block.
        """
        session = self.get(conversation)
        if self.index is None:
            return session
        session_id = session.session_id
        if isinstance(session.store, Unreachable):
            return session  # (nothing is stored this turn: nothing to guard)
        with self._lock:
            held = self._held.get(session_id)
            if held is not None:
                held.count += 1
                held.seen = time.monotonic()
                return session
        try:
            self._take(session_id, conversation)
        except SessionBusyError:
            raise
        except Exception as exc:  # (the index is out of reach: the turn runs, unguarded, rather than fail)
            internal_error(f"could not take the lease of conversation session {session_id}; the turn runs without", exc)
            return session
        session.store.held(True)  # (no other worker changes it from here on: read once, kept in memory)
        with self._lock:
            held = self._held.setdefault(session_id, Turn())
            held.count += 1
            held.seen, held.taken, held.lost = time.monotonic(), session.calls_taken(), False
            self._start_renewing()
        return session

    def seen(self, conversation: object) -> None:
        """A turn of ``conversation`` is still under way here (its lease stays renewed): called by adapters'
        hooks; takes the lease again if it was lost or given up mid-turn."""
        if self.index is None:
            return
        session_id = self.session_id(conversation)
        with self._lock:
            held = self._held.get(session_id)
            if held is not None:
                held.seen = time.monotonic()
                return
        self.hold(conversation)

    def release(self, conversation: object) -> None:
        """End one :meth:`hold` of ``conversation``; the last one gives its lease up once the turn's uploads landed."""
        if self.index is None:
            return
        session_id = self.session_id(conversation)
        with self._lock:
            held = self._held.get(session_id)
            if held is None:
                return
            held.count -= 1
            if held.count > 0:
                return
            session = self._open.get(session_id)
        if session is not None:  # (still renewed meanwhile: each request is bounded, so this ends)
            session.save_path.settle()
        with self._lock:
            if self._held.get(session_id) is not held or held.count > 0:
                return  # (a turn here took it up meanwhile)
            del self._held[session_id]
        try:
            if session is not None:
                session.store.held(False)
            self.index.release(session_id, self._holder)
        except Exception as exc:
            internal_error(f"could not give up the lease of conversation session {session_id}", exc)

    __call__ = get

    @contextlib.contextmanager
    def open(self, conversation: object) -> Iterator[ContextSession]:
        """Make ``conversation``'s session the current one for the block, without ending it afterwards.

        Tools decorated with ``@persist_context`` and adapters left on the current
        session store the block's calls in the conversation, and read back from it.
        """
        session = self.hold(conversation)
        try:
            with self._lock:
                self._active[session.session_id] = self._active.get(session.session_id, 0) + 1
            token = session.activate()
            try:
                yield session
            finally:
                session.deactivate(token)
                with self._lock:
                    left = self._active[session.session_id] - 1
                    if left:
                        self._active[session.session_id] = left
                    else:
                        del self._active[session.session_id]
                self._touch(session)
        finally:
            self.release(conversation)

    def delete(self, conversation: object) -> bool:
        """Delete everything ``conversation`` stored (the application deleted the thread); False if nothing.

        Works the same on a local folder and an object store. A conversation in use by
        an :meth:`open` block here is refused (:class:`~toolctx.ConfigError`); one held
        by another live process on a local folder raises :class:`~toolctx.SessionBusyError`. A store that
        cannot delete now raises its error (an ``OSError``, such as :class:`~toolctx.StorageError`); what is left
        goes with the store's sweep (or ``toolctx.gc`` on a folder), or with a later ``delete``.
        """
        session_id = self.session_id(conversation)
        with self._lock:
            if session_id in self._active:
                raise ConfigError(f"conversation {conversation_key(conversation)!r} is in use by an open() block")
            found = self._open.pop(session_id, None)
        if found is not None and not found.closed:
            found.close()  # (kept: its files stay, and are removed below with the rest)
        try:
            doomed = ContextSession.resume(session_id, self.context_dir, keep=False, **self._options)
        except SessionNotFoundError:
            return False
        try:
            doomed.clear_context_dir()  # (a store that cannot delete raises here: the caller is told)
        finally:
            doomed.close()  # (not kept: closing removes what is left)
        return True

    def close(self) -> None:
        """Close every conversation open in this process; their files stay for the next turn. A removal of old
        conversations running in the background is waited for: nothing is deleted after ``close`` returns."""
        with self._lock:
            sessions, self._open = list(self._open.values()), OrderedDict()
        for session in sessions:
            try:
                session.close()
            except Exception as exc:
                internal_error(f"could not close conversation session {session.session_id}", exc)
        collector = self._collector
        if collector is not None and collector is not threading.current_thread():
            collector.join()

    def collect(self) -> list[str]:
        """Remove the conversations not used for ``keep_for``; returns their session ids.

        Conversations open in any live process are never touched; with an index,
        nor are those whose lease a turn holds, and once a day the store's payloads
        no conversation lists are swept too (after a day's grace). Runs by itself in a
        background thread at most once an hour, when a conversation is opened.
        """
        self._last_gc = time.monotonic()
        if self.index is None:
            return [path.name for path in gc(self.context_dir, older_than=self.keep_for, include_kept=True)]
        from toolctx.index import expire, sweep

        removed = expire(self.index, skip=self._busy)
        store = self._store_url("")
        if store and time.monotonic() - self._last_sweep > 86_400:
            self._last_sweep = time.monotonic()
            sweep(store, self.index)
        return removed

    # -- internals -------------------------------------------------------------------------

    def _busy(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._open or session_id in self._held

    def _collect_if_due(self) -> None:
        if self._last_gc and time.monotonic() - self._last_gc < 3600:
            return
        if self._collector is not None and self._collector.is_alive():
            return
        self._last_gc = time.monotonic()
        self._collector = threading.Thread(target=self._collect_now, name="toolctx-collect", daemon=True)
        self._collector.start()

    def _collect_now(self) -> None:
        try:
            self.collect()
        except Exception as exc:
            internal_error(f"could not remove old conversations of {self!r}", exc)

    def _take(self, session_id: str, conversation: object) -> None:
        """Take the lease of ``session_id`` for this worker, waiting up to ``lease_wait`` seconds."""
        assert self.index is not None
        deadline = time.monotonic() + self.lease_wait
        pause = 0.01
        while True:
            try:
                holder = self.index.take(session_id, self._holder, self.lease)
            except KeyError:  # (removed from the index meanwhile: record it again, and take it)
                self.index.touch(session_id, self._store_url(session_id), self.keep_for)
                continue
            if holder is None:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise SessionBusyError(
                    f"conversation {conversation_key(conversation)!r} is in a turn on another worker ({holder}); "
                    f"waited {self.lease_wait:g} s for it to end. Retry once that turn is over, or give "
                    "Conversations a longer lease_wait"
                )
            time.sleep(min(left, random.uniform(pause / 2, pause)))
            pause = min(pause * 2, 0.5)

    def _start_renewing(self) -> None:
        """(Under the lock.) Renew the held leases every ``lease / 3`` seconds while there are any."""
        if self._renewer is not None and self._renewer.is_alive():
            return
        self._renewer = threading.Thread(target=self._renew, name="toolctx-lease", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        assert self.index is not None
        while True:
            time.sleep(self.lease / 3)
            now = time.monotonic()
            with self._lock:
                if not self._held:
                    self._renewer = None
                    return
                live = alive(self._held, now, self.lease, self._open, self._active)
                for session_id in self._held.keys() - live:  # (let lapse: another worker may change them)
                    self._held[session_id].lapse(self._open.get(session_id))
            for session_id in live:
                try:
                    holder = self.index.take(session_id, self._holder, self.lease)
                except Exception as exc:
                    internal_error(f"could not renew the lease of conversation session {session_id}", exc)
                    continue
                if holder is None:
                    self._renewed(session_id)
                else:
                    with self._lock:
                        if (held := self._held.get(session_id)) is not None:
                            held.lost = True  # (said once: the other worker's turn is not fought over)
                            held.lapse(self._open.get(session_id))
                    internal_error(
                        f"conversation session {session_id} was taken over by {holder} while a turn here held it "
                        f"(no renewal for {self.lease:g} s): both turns are stored, each under its own handles"
                    )

    def _renewed(self, session_id: str) -> None:
        """A lease was renewed: held again from now if it had lapsed (its store may answer from memory again,
        once read anew); given back if its turn ended meanwhile (its release ran before the renewal)."""
        with self._lock:  # (under the lock: a new turn here would otherwise find its lease given back)
            if (turn := self._held.get(session_id)) is not None:
                turn.renewed(self._open.get(session_id))
                return
            try:
                self.index.release(session_id, self._holder)  # type: ignore[union-attr]
            except Exception as exc:
                internal_error(f"could not give up the lease of conversation session {session_id}", exc)

    def _store_url(self, session_id: str) -> str:
        store = self._options.get("store") or os.environ.get("TOOLCTX_STORE") or ""
        return store if isinstance(store, str) else repr(store)

    def _close_least_used(self) -> None:
        for session_id in list(self._open):
            if len(self._open) <= self.max_open:
                return
            if session_id in self._active:
                continue  # in use by an open() block: closing it would end the block's session
            self._open.pop(session_id).close()

    def _touch(self, session: ContextSession) -> None:
        """Mark the conversation used now, so removal by age counts from its last turn."""
        if self.index is not None:
            try:
                self.index.touch(session.session_id, self._store_url(session.session_id), self.keep_for)
            except Exception as exc:
                internal_error(f"could not mark conversation session {session.session_id} as used", exc)
            return
        with contextlib.suppress(OSError):
            os.utime(session.session_dir)


_OPEN: weakref.WeakSet[Conversations] = weakref.WeakSet()
_exit_hook_registered = False


def _register(conversations: Conversations) -> None:
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_close_all)
        _exit_hook_registered = True
    _OPEN.add(conversations)


def _close_all() -> None:
    """Close open conversations when the interpreter exits, so the next process finds them complete.

    A forked child that exits leaves its parent's conversations alone: it shares their locks.
    """
    for conversations in list(_OPEN):
        if conversations._pid == os.getpid():
            conversations.close()
