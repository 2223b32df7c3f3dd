from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolctx import ConfigError, StorageKind, ToolctxWarning, current_session, persist_context, session
from toolctx._hashing import hash_args


@persist_context
def search_code(query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Search the code base."""
    return [{"path": f"src/{query}_{i}.py"} for i in range(limit)]


@persist_context(name="get_financials", description="{ticker} financials ({period})", ignore=("client",))
async def financials(ticker: str, period: str = "annual", client: object = None) -> dict[str, Any]:
    """Fetch financial statements."""
    await asyncio.sleep(0)
    return {"ticker": ticker, "period": period}


class Repo:
    def __init__(self, root: str) -> None:
        self.root = root

    @persist_context
    def read(self, path: str) -> str:
        return f"{self.root}/{path}"

    @persist_context
    @classmethod
    def kind(cls, name: str) -> str:
        return f"{cls.__name__}:{name}"

    @classmethod
    @persist_context
    def kind_inner(cls, name: str) -> str:
        return f"{cls.__name__}:{name}"

    @persist_context
    @staticmethod
    def join(a: str, b: str = "x") -> str:
        return a + b

    @staticmethod
    @persist_context
    def join_inner(a: str, b: str = "x") -> str:
        return a + b

    @persist_context
    async def aread(self, path: str) -> str:
        return path.upper()


def pointers() -> list[Any]:
    return current_session().get_all_pointers()


def test_bare_decorator_stores_the_call_and_returns_the_result_unchanged(context_dir: Path) -> None:
    sentinel: list[Any] = []

    @persist_context
    def tool(x: int) -> list[Any]:
        return sentinel

    with session(context_dir):
        assert tool(1) is sentinel
        assert search_code("auth", limit=2) == [{"path": "src/auth_0.py"}, {"path": "src/auth_1.py"}]
        stored = pointers()
        assert [p.tool_name for p in stored] == ["tool", "search_code"]
        assert stored[1].args == {"query": "auth", "limit": 2}
        assert stored[1].tool_description == "search code auth (limit=2)"
        assert current_session().load_contexts(stored)[1].result == [
            {"path": "src/auth_0.py"},
            {"path": "src/auth_1.py"},
        ]


def test_metadata_and_signature_are_kept() -> None:
    assert search_code.__name__ == "search_code"
    assert search_code.__doc__ == "Search the code base."
    assert str(inspect.signature(search_code)) == "(query: 'str', limit: 'int' = 10) -> 'list[dict[str, Any]]'"
    assert inspect.isfunction(search_code)
    assert inspect.iscoroutinefunction(financials)
    assert not inspect.iscoroutinefunction(search_code)
    assert financials.__name__ == "financials"
    assert inspect.signature(Repo.read).parameters.keys() == {"self", "path"}
    assert inspect.signature(Repo("r").read).parameters.keys() == {"path"}


def test_positional_keyword_and_default_calls_hash_the_same(context_dir: Path) -> None:
    with session(context_dir):
        search_code("q")
        search_code("q", 10)
        search_code("q", limit=10)
        search_code(query="q", limit=10)
        search_code(limit=10, query="q")
        hashes = {p.args_hash for p in pointers()}
    assert hashes == {hash_args({"query": "q", "limit": 10})[1]}


def test_async_tool_with_options(context_dir: Path) -> None:
    async def main() -> None:
        async with session(context_dir):
            result = await financials("AAPL", client=object())
            assert result == {"ticker": "AAPL", "period": "annual"}

    with session(context_dir) as s:
        asyncio.run(main())  # an inner session: the outer one sees nothing
        assert len(s) == 0
        asyncio.run(financials("MSFT", "quarterly"))
        [pointer] = s.get_all_pointers()
    assert pointer.tool_name == "get_financials"
    assert pointer.tool_description == "MSFT financials (quarterly)"
    assert pointer.args == {"ticker": "MSFT", "period": "quarterly"}  # client ignored


def test_methods_classmethods_and_staticmethods(context_dir: Path) -> None:
    repo = Repo("/root")
    with session(context_dir) as s:
        assert repo.read("a.py") == "/root/a.py"
        assert Repo.read(repo, "b.py") == "/root/b.py"
        assert Repo.kind("x") == repo.kind("x") == "Repo:x"
        assert Repo.kind_inner("y") == "Repo:y"
        assert repo.kind_inner("z") == "Repo:z"
        assert Repo.join("a") == "ax"
        assert repo.join("a", b="b") == "ab"
        assert Repo.join_inner("a", "x") == "ax"
        assert asyncio.run(repo.aread("c")) == "C"
        args = [(p.tool_name, p.args) for p in s.get_all_pointers()]
    assert args == [
        ("read", {"path": "a.py"}),
        ("read", {"path": "b.py"}),
        ("kind", {"name": "x"}),
        ("kind", {"name": "x"}),
        ("kind_inner", {"name": "y"}),
        ("kind_inner", {"name": "z"}),
        ("join", {"a": "a", "b": "x"}),
        ("join", {"a": "a", "b": "b"}),
        ("join_inner", {"a": "a", "b": "x"}),
        ("aread", {"path": "c"}),
    ]


def test_a_function_decorated_outside_a_class_binds_when_set_on_one(context_dir: Path) -> None:
    def shout(owner: Any, word: str) -> str:
        return f"{owner.name}:{word}".upper()

    tool = persist_context(shout)

    class Speaker:
        name = "s"
        say = tool

    speaker = Speaker()
    with session(context_dir) as s:
        assert tool(speaker, "hi") == "S:HI"  # called as a function: the owner is an argument
        assert speaker.say("ho") == "S:HO"  # bound: the instance is not among the arguments
        assert Speaker.say(speaker, "hu") == "S:HU"
        plain, bound, through_class = (p.args for p in s.get_all_pointers())
    assert plain["word"] == "hi"
    assert "owner" in plain
    assert (bound, through_class) == ({"word": "ho"}, {"word": "hu"})
    assert tool.__wrapped__ is shout
    assert inspect.signature(tool) == inspect.signature(shout)


def test_star_args_and_keyword_only_parameters(context_dir: Path) -> None:
    @persist_context
    def flexible(a: int, /, *rest: int, scale: int = 1, **extra: Any) -> int:
        return (a + sum(rest)) * scale

    @persist_context
    def keyword_only(*, a: int, b: int = 2) -> int:
        return a + b

    with session(context_dir) as s:
        assert flexible(1, 2, 3, scale=2, note="n") == 12
        assert keyword_only(a=1) == 3
        first, second = s.get_all_pointers()
    assert first.args == {"a": 1, "rest": [2, 3], "scale": 2, "extra": {"note": "n"}}
    assert second.args == {"a": 1, "b": 2}


def test_tool_exceptions_propagate_unchanged_and_are_recorded(context_dir: Path) -> None:
    error = LookupError("no such ticker")

    @persist_context
    def failing(ticker: str) -> None:
        raise error

    @persist_context
    async def afailing(ticker: str) -> None:
        raise error

    with session(context_dir) as s:
        with pytest.raises(LookupError) as caught:
            failing("ZZZ")
        assert caught.value is error
        with pytest.raises(LookupError):
            asyncio.run(afailing("YYY"))
        with pytest.raises(TypeError):
            failing()  # type: ignore[call-arg]
        stored = s.load_contexts(s.get_all_pointers())
        assert [p.is_error for p in s.get_all_pointers()] == [True, True, True]
    assert [c.error.type if c.error else None for c in stored] == ["LookupError", "LookupError", "TypeError"]
    assert stored[0].args == {"ticker": "ZZZ"}
    assert stored[0].result is None


def test_record_errors_false_stores_nothing_for_failures(context_dir: Path) -> None:
    @persist_context(record_errors=False)
    def failing() -> None:
        raise ValueError("x")

    with session(context_dir) as s:
        with pytest.raises(ValueError, match="x"):
            failing()
        assert len(s) == 0


def test_base_exceptions_pass_through_unrecorded(context_dir: Path) -> None:
    @persist_context
    def interrupted() -> None:
        raise KeyboardInterrupt

    with session(context_dir) as s:
        with pytest.raises(KeyboardInterrupt):
            interrupted()
        assert len(s) == 0


def test_threshold_option(context_dir: Path) -> None:
    @persist_context(threshold=0)
    def always_disk() -> str:
        return "tiny"

    with session(context_dir):
        always_disk()
        assert pointers()[0].storage is StorageKind.DISK


def test_enabled_false_returns_the_function_itself() -> None:
    def tool() -> int:
        return 1

    assert persist_context(enabled=False)(tool) is tool


def test_description_callable_and_its_failure(context_dir: Path) -> None:
    @persist_context(description=lambda a: f"page {a['n']}")
    def page(n: int) -> int:
        return n

    @persist_context(description=lambda a: a["missing"])
    def broken(n: int) -> int:
        return n

    @persist_context(description=lambda a: 42)
    def not_text(n: int) -> int:
        return n

    with session(context_dir):
        page(3)
        with pytest.warns(ToolctxWarning, match="description of tool 'broken' failed"):
            assert broken(4) == 4
        with pytest.warns(ToolctxWarning, match="not str"):
            assert not_text(5) == 5
        assert [p.tool_description for p in pointers()] == ["page 3", "broken (n=4)", "not text (n=5)"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ignore": ("nope",)}, r"ignore names \['nope'\].*\['query', 'limit'\]"),
        ({"description": "{nope}"}, "refers to {nope}"),
        ({"description": 3}, "format string or a callable"),
        ({"threshold": -5}, "threshold"),
        ({"name": ""}, "name must be"),
    ],
)
def test_bad_options_fail_at_decoration(options: dict[str, Any], message: str) -> None:
    def tool(query: str, limit: int = 1) -> None:
        return None

    with pytest.raises(ConfigError, match=message):
        persist_context(**options)(tool)


def test_ignore_accepts_a_single_name(context_dir: Path) -> None:
    @persist_context(ignore="client")
    def tool(q: str, client: object = None) -> str:
        return q

    with session(context_dir):
        tool("a", client=object())
        assert pointers()[0].args == {"q": "a"}


def test_decorating_a_class_or_a_non_callable_is_refused() -> None:
    with pytest.raises(ConfigError, match="not classes"):
        persist_context(Repo)
    with pytest.raises(ConfigError, match="function or method"):
        persist_context(42)  # type: ignore[call-overload]


def test_calls_outside_any_session_go_to_the_default_session() -> None:
    search_code("default", limit=1)
    assert [p.args["query"] for p in current_session().get_all_pointers()] == ["default"]


def test_a_tool_used_after_its_session_closed_lands_in_the_default_one(context_dir: Path) -> None:
    with session(context_dir) as s:
        pass
    search_code("late", limit=1)
    assert len(s) == 0
    assert len(current_session()) == 1


def test_a_storage_failure_never_breaks_the_tool(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_encode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("encoder bug")

    monkeypatch.setattr("toolctx.sessions._saving.encode", broken_encode)
    with session(context_dir) as s:
        with pytest.warns(ToolctxWarning, match="could not store a call of tool 'search_code'"):
            assert search_code("x", limit=1) == [{"path": "src/x_0.py"}]
        assert len(s) == 0


def test_an_argument_capture_failure_never_breaks_the_tool(context_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolctx._decorator.encode", lambda args, sort_keys: 1 / 0)
    with session(context_dir) as s:
        with pytest.warns(ToolctxWarning, match="could not capture the arguments"):
            assert search_code("x", limit=1) == [{"path": "src/x_0.py"}]
        assert len(s) == 0


def test_arguments_are_captured_before_the_tool_mutates_them(context_dir: Path) -> None:
    @persist_context
    def appender(items: list[int]) -> int:
        items.append(99)
        return len(items)

    with session(context_dir):
        appender([1])
        assert pointers()[0].args == {"items": [1]}


def test_a_classmethod_passing_the_class_positionally_records_only_the_arguments(context_dir: Path) -> None:
    # Python 3.13's classmethod calls the function it wraps with the class as the first
    # argument instead of binding through the wrapper's __get__; this does the same.
    wrapper = Repo.__dict__["kind_inner"].__func__
    with session(context_dir) as s:
        assert wrapper(Repo, "q") == "Repo:q"
        [pointer] = s.get_all_pointers()
    assert pointer.args == {"name": "q"}


def test_a_tool_outliving_its_session_never_fails_when_no_default_session_can_start(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse() -> None:
        raise ConfigError("TOOLCTX_CONTEXT_DIR points nowhere usable")

    @persist_context
    def slow() -> str:
        s.close()  # the block's session ends while the tool runs
        monkeypatch.setattr("toolctx.sessions._current.ContextSession", refuse)  # and no default can start
        return "done"

    with session(context_dir) as s, pytest.warns(ToolctxWarning, match="could not store a call"):
        assert slow() == "done"


# -- persisting never breaks the tool -----------------------------------------------------


class _Boom(BaseException):
    """Raised by a value's own code: not an Exception, so only a catch-all sees it."""


class _ReprRaises:
    def __repr__(self) -> str:
        raise _Boom("repr")


class _TolistRaises:
    def tolist(self) -> list[int]:
        raise _Boom("tolist")

    def __repr__(self) -> str:
        return "<tolist raises>"


class _StrRaises(Exception):
    def __str__(self) -> str:
        raise _Boom("str")


def test_warnings_made_errors_never_reach_the_tool_call(context_dir: Path) -> None:
    import toolctx.testing

    @persist_context
    def opaque() -> object:
        return _TolistRaises()  # not JSON: stored in the fallback form, with a warning

    with session(context_dir) as s, warnings.catch_warnings():
        warnings.simplefilter("error")  # python -W error, pytest's filterwarnings = error
        result = opaque()
        assert len(s) == 1  # stored all the same
    assert isinstance(result, _TolistRaises)
    held = toolctx.testing.escalated_warnings()
    assert len(held) == 1
    assert "not plain JSON" in held[0]
    assert toolctx.testing.escalated_warnings() == []  # taken once


def test_a_write_failure_under_warnings_as_errors_still_returns_the_result(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolctx.testing

    def broken_put(self: Any, name: str, chunks: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("toolctx.storage._local.LocalStore.put", broken_put)
    with session(context_dir, threshold=0), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert search_code("x", limit=2) == [{"path": "src/x_0.py"}, {"path": "src/x_1.py"}]
    assert any("could not store the output" in text for text in toolctx.testing.escalated_warnings())


@pytest.mark.parametrize(
    ("result", "stored"),
    [
        (_ReprRaises(), {"$repr": "<repr failed: _Boom>", "$type": f"{__name__}._ReprRaises"}),
        (_TolistRaises(), {"$repr": "<tolist raises>", "$type": f"{__name__}._TolistRaises"}),
    ],
    ids=["__repr__", "tolist"],
)
def test_a_base_exception_from_the_results_own_code_stays_inside_toolctx(
    context_dir: Path, result: object, stored: dict[str, str]
) -> None:
    @persist_context
    def tool() -> object:
        return result

    with session(context_dir) as s:
        with pytest.warns(ToolctxWarning, match="fallback form"):
            returned = tool()
        [context] = s.load_contexts(s.get_all_pointers())
    assert returned is result
    assert context.result == stored


def test_a_base_exception_from_the_tools_exception_str_stays_inside_toolctx(context_dir: Path) -> None:
    @persist_context
    def fails() -> None:
        raise _StrRaises()

    with session(context_dir) as s:
        with pytest.raises(_StrRaises):
            fails()
        [pointer] = s.get_all_pointers()
    assert pointer.is_error


def test_keyboard_interrupt_from_the_results_own_code_still_stops_the_program(context_dir: Path) -> None:
    class Interrupting:
        def __repr__(self) -> str:
            raise KeyboardInterrupt

    @persist_context
    def tool() -> object:
        return Interrupting()

    with session(context_dir), pytest.raises(KeyboardInterrupt):
        tool()


# -- generator tools ------------------------------------------------------------------------


def test_a_generator_tool_is_stored_as_what_it_yielded(context_dir: Path) -> None:
    @persist_context
    def rows(n: int) -> Iterator[dict[str, int]]:
        for i in range(n):
            yield {"row": i}

    with session(context_dir) as s:
        produced = rows(3)
        assert inspect.isgenerator(produced)
        assert len(s) == 0  # stored when it finishes, not when it is created
        assert list(produced) == [{"row": 0}, {"row": 1}, {"row": 2}]
        [context] = s.load_contexts(s.get_all_pointers())
    assert context.args == {"n": 3}
    assert context.result == [{"row": 0}, {"row": 1}, {"row": 2}]


def test_a_generator_passes_sends_throws_and_its_return_value_through(context_dir: Path) -> None:
    @persist_context
    def echo() -> Generator[str, str, str]:
        received = yield "ready"
        while received != "stop":
            try:
                received = yield f"echo {received}"
            except ValueError as exc:
                received = yield f"caught {exc}"
        return "bye"

    with session(context_dir) as s:
        gen = echo()
        assert next(gen) == "ready"
        assert gen.send("a") == "echo a"
        assert gen.throw(ValueError("bad")) == "caught bad"
        with pytest.raises(StopIteration) as stop:
            gen.send("stop")
        assert stop.value.value == "bye"
        [context] = s.load_contexts(s.get_all_pointers())
    assert context.result == ["ready", "echo a", "caught bad"]


def test_a_generator_closed_early_or_failing_stores_what_it_yielded_so_far(context_dir: Path) -> None:
    @persist_context
    def numbers(fail_at: int) -> Iterator[int]:
        for i in range(10):
            if i == fail_at:
                raise RuntimeError(f"failed at {i}")
            yield i

    with session(context_dir) as s:
        gen = numbers(99)
        assert [next(gen), next(gen)] == [0, 1]
        gen.close()
        with pytest.raises(RuntimeError, match="failed at 2"):
            list(numbers(2))
        closed, failed = s.load_contexts(s.get_all_pointers())
    assert closed.result == [0, 1]
    assert closed.error is None
    assert failed.result == [0, 1]
    assert failed.error is not None
    assert failed.error.message == "failed at 2"


def test_a_generator_stopped_by_a_base_exception_is_not_stored_as_a_success(context_dir: Path) -> None:
    @persist_context
    def exiting() -> Iterator[int]:
        yield 0
        raise SystemExit(3)

    @persist_context
    async def cancelled() -> AsyncIterator[int]:
        yield 0
        raise asyncio.CancelledError

    async def consume() -> list[int]:
        return [i async for i in cancelled()]

    with session(context_dir) as s:
        with pytest.raises(SystemExit):
            list(exiting())
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(consume())
        assert s.get_all_pointers() == []  # as a plain tool's call stopped that way is not stored


def test_an_async_generator_tool_is_stored_as_what_it_yielded(context_dir: Path) -> None:
    @persist_context
    async def ticks(n: int) -> AsyncIterator[int]:
        for i in range(n):
            await asyncio.sleep(0)
            yield i

    async def consume() -> list[int]:
        return [i async for i in ticks(3)]

    with session(context_dir) as s:
        assert inspect.isasyncgenfunction(ticks)
        assert asyncio.run(consume()) == [0, 1, 2]
        [context] = s.load_contexts(s.get_all_pointers())
    assert context.result == [0, 1, 2]


def test_an_async_generator_closed_early_or_thrown_into_is_passed_through(context_dir: Path) -> None:
    @persist_context
    async def counter() -> AsyncGenerator[int, None]:
        i = 0
        while True:
            try:
                yield i
            except ValueError:
                i = 100
            i += 1

    async def drive() -> list[int]:
        gen = counter()
        seen = [await gen.__anext__(), await gen.__anext__()]
        seen.append(await gen.athrow(ValueError("reset")))
        await gen.aclose()
        return seen

    with session(context_dir) as s:
        assert asyncio.run(drive()) == [0, 1, 101]
        [context] = s.load_contexts(s.get_all_pointers())
    assert context.result == [0, 1, 101]


def test_a_function_returning_a_generator_is_stored_as_what_it_yields(context_dir: Path) -> None:
    @persist_context
    def squares(n: int) -> Iterator[int]:
        return (i * i for i in range(n))

    with session(context_dir) as s:
        assert sum(squares(4)) == 14
        [context] = s.load_contexts(s.get_all_pointers())
    assert context.result == [0, 1, 4, 9]


def test_parameters_a_framework_injects_are_never_stored(context_dir: Path) -> None:
    from typing import Annotated

    from agents import RunContextWrapper
    from langchain.tools import ToolRuntime
    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt import InjectedState

    def lookup(ctx: Any, order_id: str, runtime: Any = None, config: Any = None, state: Any = None) -> str:
        return order_id

    # Evaluated annotations, as in a module without ``from __future__ import annotations``.
    lookup.__annotations__ = {
        "ctx": RunContextWrapper[Any],
        "order_id": str,
        "runtime": ToolRuntime | None,
        "config": RunnableConfig | None,
        "state": Annotated[dict[str, Any] | None, InjectedState],
    }
    lookup = persist_context(lookup)

    @persist_context
    def written(ctx: RunContextWrapper[Any], order_id: str) -> str:  # annotations kept as text
        return order_id

    user_data = {"user": "ann", "card": "4111 1111 1111 1111"}
    with session(context_dir) as s:
        lookup(RunContextWrapper(context=user_data), "A1", None, {"tags": ["x"]}, {"messages": []})
        lookup(RunContextWrapper(context={"other": 1}), "A1")
        written(RunContextWrapper(context=user_data), "A1")
        first, second, third = s.get_all_pointers()
    assert first.args == second.args == third.args == {"order_id": "A1"}
    assert first.args_hash == second.args_hash  # the same model call: the same stored call


def test_a_session_ending_between_the_check_and_the_save_still_keeps_the_call(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolctx.sessions._saving import SavePath

    real_save = SavePath.save

    def closing_save(self: SavePath, *args: Any) -> Any:
        if self is block._saver:  # the block's session ends right as the call is handed over
            block.close()
        return real_save(self, *args)

    monkeypatch.setattr(SavePath, "save", closing_save)
    with session(context_dir) as block:
        assert search_code("late", limit=1) == [{"path": "src/late_0.py"}]
    assert len(block) == 0
    assert [p.tool_name for p in current_session().get_all_pointers()] == ["search_code"]
