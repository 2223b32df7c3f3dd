"""Hostile projects: FIFOs, devices, sockets and links where files should be, ignore files that never end.

Each build runs in a child process with a time bound and a memory bound, so a
regression (an open that waits for a writer, a read of ``/dev/zero``) fails the
test instead of hanging the suite or eating the machine's memory.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import unavailable

TIME_BOUND = 120  # seconds; a build of these projects takes a few
MEMORY_BOUND = 4 << 30  # bytes of address space

BUILD = """
import json, sys
from toolctx.fresh import ContextBuilderOptions, ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter

root, files, secrets = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1"
system = create_context_system(
    root, counter=EstimateCounter(), builder_options=ContextBuilderOptions(include_secret_files=secrets)
)
task = TaskSpec(id="t", name="charge the card in euros", files=tuple(files))
context = system.manager.build_fresh_context_sync(task, ContextOptions(max_tokens=60_000))
print(json.dumps({
    "listed": [path for path, _mtime, _size in system.builder.files.scan()[0]],
    "files": [f.path for f in context.relevant_files],
    "warnings": list(context.warnings),
    "text": "\\n".join(m["content"] for m in context.to_messages()),
}))
"""


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


def build(root: Path, *task_files: str, secrets: bool = False) -> dict[str, object]:
    """A context for a task naming ``task_files``, built in a child process that must finish within the bounds."""
    command = [sys.executable, "-c", BUILD, str(root), json.dumps(task_files), "1" if secrets else "0"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TIME_BOUND, preexec_fn=_bounded, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the build did not finish within {TIME_BOUND} s: something blocked or read without end")
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def warnings_of(result: dict[str, object]) -> str:
    return "\n".join(result["warnings"])  # type: ignore[arg-type]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "payments.py").write_text("def charge_card(card, amount):\n    return amount * 0.9\n")
    (root / "pkg" / "refunds.py").write_text("def refund_card(card, amount):\n    return -amount\n")
    return root


def test_a_fifo_named_gitignore_is_reported_and_not_opened(shop: Path) -> None:
    os.mkfifo(shop / ".gitignore")  # no writer ever: a blocking open would wait forever
    result = build(shop)
    assert "'.gitignore' is a FIFO, not a regular file; not applied" in warnings_of(result)
    assert "pkg/payments.py" in result["listed"]  # type: ignore[operator]


def test_a_gitignore_linked_to_dev_zero_is_not_read(shop: Path) -> None:
    (shop / "pkg" / ".gitignore").symlink_to("/dev/zero")
    result = build(shop)
    assert "'pkg/.gitignore' links outside the project root; not applied" in warnings_of(result)
    assert "pkg/refunds.py" in result["listed"]  # type: ignore[operator]


def test_a_gitignore_linked_outside_the_root_is_not_applied(shop: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.gitignore"
    outside.write_text("refunds.py\n")
    (shop / ".gitignore").symlink_to(outside)
    result = build(shop)
    assert "pkg/refunds.py" in result["listed"]  # type: ignore[operator]
    assert "'.gitignore' links outside the project root; not applied" in warnings_of(result)


def test_a_gitignore_linked_to_one_inside_the_root_is_applied(shop: Path) -> None:
    (shop / "ignore-rules").write_text("refunds.py\n")
    (shop / ".gitignore").symlink_to(shop / "ignore-rules")
    result = build(shop)
    assert "pkg/refunds.py" not in result["listed"]  # type: ignore[operator]
    assert "pkg/payments.py" in result["listed"]  # type: ignore[operator]


def test_a_fifo_source_file_is_reported_not_read_even_when_the_task_names_it(shop: Path) -> None:
    os.mkfifo(shop / "pkg" / "pipe.py")
    result = build(shop, "pkg/pipe.py", "pkg/payments.py")
    warnings = warnings_of(result)
    assert "'pkg/pipe.py' is a FIFO, not a regular file; left out" in warnings
    assert "task file 'pkg/pipe.py' named by the task is a FIFO, not a regular file; left out" in warnings
    assert result["files"][0] == "pkg/payments.py"  # type: ignore[index]


def test_links_to_devices_and_a_socket_are_left_out(shop: Path) -> None:
    (shop / "pkg" / "zero.py").symlink_to("/dev/zero")
    (shop / "pkg" / "random.py").symlink_to("/dev/urandom")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(shop / "pkg" / "control.sock"))
        result = build(shop, "pkg/zero.py")
    finally:
        server.close()
    warnings = warnings_of(result)
    assert "task file 'pkg/zero.py' named by the task is outside the project root; left out" in warnings
    assert "'pkg/control.sock' is a socket, not a regular file; left out" in warnings
    assert set(result["listed"]) == {"pkg/payments.py", "pkg/refunds.py"}  # type: ignore[arg-type]


def test_a_device_node_inside_the_root_is_left_out(shop: Path) -> None:
    try:
        os.mknod(shop / "pkg" / "null.py", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        unavailable("making a device node needs privileges this run does not have")
    result = build(shop, "pkg/null.py")
    warnings = warnings_of(result)
    assert "'pkg/null.py' is a character device, not a regular file; left out" in warnings
    assert "task file 'pkg/null.py' named by the task is a character device, not a regular file" in warnings


def test_a_symlinked_folder_leading_outside_is_not_entered(shop: Path, tmp_path: Path) -> None:
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "private.py").write_text("PRIVATE_TOKEN = 'charge card euros outside'\n")
    (shop / "vendor").symlink_to(outside)
    result = build(shop, "vendor/private.py")
    assert not any(path.startswith("vendor") for path in result["listed"])  # type: ignore[union-attr]
    assert "PRIVATE_TOKEN" not in result["text"]  # type: ignore[operator]
    assert "task file 'vendor/private.py' named by the task is outside the project root" in warnings_of(result)


def test_an_ignore_file_over_the_bound_is_applied_up_to_it(shop: Path) -> None:
    filler = "".join(f"/no-such-file-{n:07d}.txt\n" for n in range(200_000))  # about 5 MiB
    (shop / ".gitignore").write_text("refunds.py\n" + filler + "payments.py\n")
    result = build(shop)
    assert "pkg/refunds.py" not in result["listed"]  # type: ignore[operator]
    assert "pkg/payments.py" in result["listed"]  # type: ignore[operator]  # past the bound: not applied
    assert "'.gitignore' is over 4,194,304 bytes; only its first" in warnings_of(result)


ENV = "STRIPE_SECRET=sk_live_not_for_agents\n"


def test_credentials_files_stay_out_unless_asked_for(shop: Path) -> None:
    (shop / ".env").write_text(ENV)
    (shop / "pkg" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\ncharge card\n")
    (shop / ".npmrc").write_text("//registry.npmjs.org/:_authToken=npm_not_for_agents\n")
    (shop / ".env.example").write_text("STRIPE_SECRET=\n")
    result = build(shop, ".env")
    assert not {".env", ".npmrc", "pkg/server.pem"} & set(result["listed"])  # type: ignore[arg-type]
    assert ".env.example" in result["listed"]  # type: ignore[operator]  # a template holds no secret
    assert "sk_live_not_for_agents" not in result["text"]  # type: ignore[operator]
    assert "task file '.env' named by the task is named like a credentials file ('.env')" in warnings_of(result)

    asked = build(shop, ".env", secrets=True)
    assert {".env", ".npmrc", "pkg/server.pem"} <= set(asked["listed"])  # type: ignore[arg-type]
    assert asked["files"][0] == ".env"  # type: ignore[index]
    assert "sk_live_not_for_agents" in asked["text"]  # type: ignore[operator]
