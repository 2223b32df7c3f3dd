"""Pydantic models for what toolctx stores and hands out.

Only the small metadata goes through pydantic; results are serialised with orjson
(see :mod:`toolctx._serialize`), so a multi-megabyte result never pays for model
validation.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from toolctx._naming import handle

__all__ = ["CallMetadata", "ContextPointer", "ErrorInfo", "StorageKind", "StoredContext"]

FORMAT = "toolctx/1"
"""Value of the ``format`` key in every stored context document."""


class StorageKind(StrEnum):
    """Where a stored output currently lives."""

    MEMORY = "memory"
    """In the session's memory (small outputs, within the memory budget)."""
    DISK = "disk"
    """In the session's store (a file under ``<context_dir>/<session_id>/`` by default)."""
    NONE = "none"
    """Not stored: writing it failed. The call is still recorded."""


class ErrorInfo(BaseModel):
    """The exception a tool raised, recorded as context."""

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    traceback: str | None = None


class CallMetadata(BaseModel):
    """What toolctx records about every stored call.

    The one definition shared by :class:`ContextPointer`, :class:`StoredContext`,
    the stored file and the session manifest: a field added here is carried by
    all four. ``args`` holds the call's arguments in JSON form.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    tool_name: str
    tool_description: str
    args: dict[str, Any]
    args_hash: str
    timestamp: datetime
    task_id: int | str | None = None
    query_id: str | None = None
    call_id: str | None = Field(default=None, description="The framework's id for this tool call, if known.")


class ContextPointer(CallMetadata):
    """A lightweight handle to one stored tool call; never holds the result itself.

    ``id`` is the handle every other API accepts (adapters show it to models as
    ``ctx:<id>``). ``filepath`` and ``filename`` are set while the output is on disk.
    Very large argument values are shortened in ``args`` (the stored context keeps
    them whole).
    """

    size: int = Field(ge=0, description="Bytes of the serialised result.")
    storage: StorageKind
    filename: str | None = None
    filepath: str | None = None
    is_error: bool = False
    tokens: int = Field(default=0, ge=0, description="Estimated tokens of the stored output (made at save time).")
    preview: str = Field(default="", description="The start of the output as text, at most 200 characters.")

    @property
    def stored(self) -> bool:
        """False when writing the output failed and only the call was recorded."""
        return self.storage is not StorageKind.NONE

    @property
    def handle(self) -> str:
        """The handle adapters show to models: ``ctx:<id>``."""
        return handle(self.id)


class StoredContext(CallMetadata):
    """One tool call in full: arguments, result (or error) and metadata.

    ``result`` is the JSON form of what the tool returned (tuples become lists,
    pydantic models and dataclasses become objects, sets sorted lists, decimals and
    paths strings). Values JSON cannot hold are stored in this fallback form, and
    ``notes`` says which kinds occurred:

    ========================================  ============================================
    value                                     stored as
    ========================================  ============================================
    bytes, bytearray, memoryview              ``{"$bytes": "<base64>"}``
    integer outside the 64-bit range          its decimal string
    string with lone surrogates               the surrogates as ``\\udXXX`` escapes
    reference cycle                           ``{"$cycle": "<type name>"}`` at the back-reference
    nesting deeper than JSON's limit          ``{"$truncated": "<type name>"}`` past 200 levels
    any other object                          ``{"$repr": "<repr, at most 2,000 chars>", "$type": "<module.Qualname>"}``
    a container whose own code raises         ``{"$repr": "<reading it raised Name>", "$type": "<module.Qualname>"}``
    ========================================  ============================================

    A generator tool's result is the list of the items it yielded.

    NaN and infinities become ``null`` without a note.
    """

    result: Any = None
    error: ErrorInfo | None = None
    notes: list[str] = Field(default_factory=list)


_Model = TypeVar("_Model", bound=BaseModel)


def trusted(cls: type[_Model], fields: dict[str, Any]) -> _Model:
    """An instance of ``cls`` from ``fields``, every field given in order, all of them toolctx's own valid values.

    What ``model_construct`` does for such a dict, without its loop over the
    fields (a third of the cost of handing out a pointer). The dict becomes the
    instance's own: pass a fresh one.
    """
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", fields)
    object.__setattr__(model, "__pydantic_fields_set__", set(fields))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model
