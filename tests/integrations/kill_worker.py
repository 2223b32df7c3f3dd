"""A worker that stores tool outputs of one conversation until it is killed: ``python -m tests.integrations.kill_worker
<context dir> <conversation> <round> <lease>`` (the store and index from ``TOOLCTX_STORE`` and ``TOOLCTX_INDEX``).

It first reads back every output the killed workers before it acknowledged (their handles come on standard input,
one ``handle<TAB>round<TAB>n`` per line, then an empty line) and says how many read back exactly; then it takes the
conversation's turn and stores outputs one by one, printing each handle once its stand-in is returned to the
tool's caller (acknowledged), until it is killed.
"""

from __future__ import annotations

import sys
import time

import toolctx
from toolctx.compaction import persist_call, read_context


def output(round_: int, n: int) -> str:
    return "".join(f"round {round_} call {n} line {i}: the figures\n" for i in range(400))


def main() -> None:
    context_dir, conversation, round_, lease = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    wanted = []
    for line in sys.stdin:
        if not line.strip():
            break
        handle, was, n = line.split("\t")
        wanted.append((handle, int(was), int(n)))
    conversations = toolctx.Conversations(context_dir, lease=lease, lease_wait=10 * lease)
    started = time.monotonic()
    with conversations.open(conversation) as session:
        waited = time.monotonic() - started
        back = sum(
            read_context(session, handle, 0, 10**6, scope=conversation).partition("\n")[2] == output(was, n)
            for handle, was, n in wanted
        )
        print(f"read\t{back}\t{len(wanted)}\t{waited:.3f}", flush=True)
        n = 0
        while True:
            n += 1
            saved = persist_call(session, "report", {"n": n}, output(round_, n), call_id=f"r{round_}-{n}",
                                 task_id=conversation)  # fmt: skip
            assert saved is not None
            assert saved.stored
            print(f"ack\tctx:{saved.id}\t{round_}\t{n}", flush=True)  # (what a tool hook hands the model)


if __name__ == "__main__":
    main()
