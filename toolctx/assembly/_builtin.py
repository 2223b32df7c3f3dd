"""Built-in plugins: the plan (tasks and their statuses, never compacted) and the memory index (tiered memory)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolctx.assembly._types import config_error
from toolctx.errors import ConfigError
from toolctx.tokens import TokenCounter

if TYPE_CHECKING:
    from toolctx.memory import AgentMemory, ContextItem

__all__ = ["MemoryPlugin", "Plan", "PlanPlugin", "PlanTask", "TaskStatus"]

TaskStatus = Literal["pending", "in_progress", "completed", "failed", "skipped"]
_MARKS = {"pending": " ", "in_progress": "~", "completed": "x", "failed": "!", "skipped": "-"}


class PlanTask(BaseModel):
    """One task of a plan: an id, what to do, its status and the tasks it waits for."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    description: str = Field(min_length=1)
    status: TaskStatus = "pending"
    depends_on: tuple[str, ...] = ()


class Plan(BaseModel):
    """A goal and its tasks, in order."""

    model_config = ConfigDict(frozen=True)

    goal: str = ""
    tasks: tuple[PlanTask, ...] = ()

    @model_validator(mode="after")
    def _known(self) -> Plan:
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError(f"task ids must be unique, got {ids}")
        for task in self.tasks:
            unknown = set(task.depends_on) - set(ids)
            if unknown:
                raise ValueError(f"task {task.id!r} depends on unknown tasks {sorted(unknown)}")
        return self


class PlanPlugin:
    """The plan an agent executes, shown on every model call and never compacted.

    ``set_plan`` takes a :class:`Plan` (or its fields as a dict); ``update_task_status``
    marks progress; ``executable_tasks`` lists the pending tasks whose dependencies
    are completed.
    """

    compactable = False

    def __init__(self, plan: Plan | dict[str, Any] | None = None, *, name: str = "plan", priority: int = 1) -> None:
        self.name = name
        self.priority = priority
        self._plan: Plan | None = None
        if plan is not None:
            self.set_plan(plan)

    def __repr__(self) -> str:
        return f"PlanPlugin({self.name!r}, tasks={len(self._plan.tasks) if self._plan else 0})"

    def set_plan(self, plan: Plan | dict[str, Any]) -> None:
        try:
            self._plan = plan if isinstance(plan, Plan) else Plan.model_validate(plan)
        except ValidationError as exc:
            raise config_error("plan", exc) from None

    def get_plan(self) -> Plan | None:
        return self._plan

    def update_task_status(self, task_id: str, status: TaskStatus) -> PlanTask:
        """Set one task's status; returns the task as updated."""
        if self._plan is None:
            raise ConfigError("there is no plan yet; call set_plan() first")
        if status not in _MARKS:
            raise ConfigError(f"status must be one of {sorted(_MARKS)}, got {status!r:.80}")
        tasks = list(self._plan.tasks)
        for i, task in enumerate(tasks):
            if task.id == task_id:
                tasks[i] = task.model_copy(update={"status": status})
                self._plan = self._plan.model_copy(update={"tasks": tuple(tasks)})
                return tasks[i]
        raise ConfigError(f"no task {task_id!r} in the plan; its tasks are {[t.id for t in tasks]}")

    def executable_tasks(self) -> list[PlanTask]:
        """Pending tasks whose dependencies are all completed, in plan order."""
        if self._plan is None:
            return []
        done = {t.id for t in self._plan.tasks if t.status == "completed"}
        return [t for t in self._plan.tasks if t.status == "pending" and set(t.depends_on) <= done]

    def get_component(self) -> str | None:
        plan = self._plan
        if plan is None or (not plan.tasks and not plan.goal):
            return None
        lines = [f"Goal: {plan.goal}"] if plan.goal else []
        for task in plan.tasks:
            after = f" (after {', '.join(task.depends_on)})" if task.depends_on else ""
            lines.append(f"- [{_MARKS[task.status]}] {task.id}: {task.description}{after}")
        return "\n".join(lines)

    def get_state(self) -> dict[str, Any] | None:
        return None if self._plan is None else self._plan.model_dump(mode="json")

    def restore_state(self, state: Any) -> None:
        self._plan = None if state is None else Plan.model_validate(state)


class MemoryPlugin:
    """An index of the agent's tiered memory: HOT items, and WARM ones on demand (:meth:`show_warm`).

    Each item is one line (id, type, the start of its content). Compaction shows
    fewer items (WARM ones first, then half the HOT ones each step); it never
    deletes or changes memory. :meth:`reset` shows the full index again.
    """

    compactable = True

    def __init__(
        self,
        memory: AgentMemory,
        *,
        name: str = "memory_index",
        priority: int = 8,
        max_items: int = 20,
        preview_chars: int = 200,
    ) -> None:
        if not callable(getattr(memory, "items", None)):
            raise ConfigError(f"memory must be a toolctx.memory AgentMemory (store.agent(...)), got {memory!r:.80}")
        for option, value in (("max_items", max_items), ("preview_chars", preview_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{option} must be a whole number >= 1, got {value!r:.80}")
        self.memory = memory
        self.name = name
        self.priority = priority
        self.max_items = max_items
        self.preview_chars = preview_chars
        self.shown = max_items  # HOT items shown now
        self.warm = 0  # WARM items shown now
        self._read: tuple[tuple[int | None, int, int], tuple[list[ContextItem], list[ContextItem]]] = (
            (None, 0, 0),
            ([], []),
        )

    def __repr__(self) -> str:
        return f"MemoryPlugin({self.name!r}, shown={self.shown}, warm={self.warm})"

    def show_warm(self, count: int = 10) -> None:
        """Show up to ``count`` WARM items too, from the next model call on (0 hides them)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be a whole number >= 0, got {count!r:.80}")
        self.warm = count

    def reset(self) -> None:
        """Show as many HOT items as at the start again (after compaction lowered it)."""
        self.shown = self.max_items

    def _line(self, item: ContextItem) -> str:
        text = " ".join(item.content.split())
        if len(text) > self.preview_chars:
            text = text[: self.preview_chars] + " [...]"
        return f"- #{item.id} {item.item_type} ({item.tier}): {text}"

    def _items(self, shown: int, warm: int) -> tuple[list[ContextItem], list[ContextItem]]:
        """The best ``shown`` HOT items and ``warm`` WARM ones (best first, so fewer of them are a prefix).

        Read again only when the store's revision moved (any write, from any
        process, moves it), else the items read last time for the same counts.
        The revision is read first, so a write landing in between is read again.
        """
        revision = self._revision()
        key = (revision, shown, warm)
        if revision is not None and key == self._read[0]:
            return self._read[1]
        hot = self.memory.items("HOT", limit=shown) if shown else []
        found = hot, (self.memory.items("WARM", limit=warm) if warm else [])
        self._read = (key, found)
        return found

    def _revision(self) -> int | None:
        revision = getattr(getattr(self.memory, "store", None), "revision", None)
        if not callable(revision):
            return None
        found = revision()
        return found if isinstance(found, int) else None

    def _text(self, hot: list[ContextItem], warm: list[ContextItem]) -> str | None:
        return "\n".join(self._line(i) for i in [*hot, *warm]) or None

    def get_component(self) -> str | None:
        return self._text(*self._items(self.shown, self.warm))

    def compact(self, target_tokens: int, counter: TokenCounter) -> int:
        hot, warm = self._items(self.shown, self.warm)  # read once: each step shows a prefix of these

        def tokens() -> int:
            return counter.count(self._text(hot[: self.shown], warm[: self.warm]) or "")

        before = tokens()
        if self.warm:
            self.warm = 0
        else:
            self.shown //= 2
        after = tokens()
        while after > target_tokens and (self.shown or self.warm):
            self.shown //= 2
            after = tokens()
        return before - after

    def get_state(self) -> dict[str, int]:
        return {"shown": self.shown, "warm": self.warm}

    def restore_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise ConfigError(f"a memory plugin state is a dict with shown and warm, got {state!r:.80}")
        self.shown = int(state.get("shown", self.max_items))
        self.warm = int(state.get("warm", 0))
