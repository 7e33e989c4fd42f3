"""Limiting a command by the memory its processes hold resident, watched from the host (bwrap).

An address-space rlimit counts what a process reserves, not what it uses: V8 reserves its code range,
Go its arenas and the JVM its heap far past what they touch, so node could not even start under one.
The watch sums the resident set of every process descended from the command's (the sandbox's own pid
namespace is still visible from the host's /proc) every INTERVAL_S; past the limit the whole tree is
killed and the command is reported killed by the limit, never as a failing test. A spike shorter than
one interval may pass unseen: the limit keeps a run from holding the host's memory, not every page.
"""

from __future__ import annotations

import os
from pathlib import Path

INTERVAL_S = 0.1
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat(pid: str, proc: Path) -> tuple[int, int] | None:
    """(parent pid, resident pages) of a process, or None when it is gone."""
    try:
        text = (proc / pid / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after its last ")" are fixed.
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[1]), int(fields[21])


def tree_resident(root: int, proc: Path = Path("/proc")) -> int:
    """Bytes held resident by `root` and every process descended from it."""
    stats = {int(pid): s for pid in os.listdir(proc) if pid.isdigit() and (s := _stat(pid, proc)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1] * PAGE
        todo += children.get(pid, [])
    return total


def over_limit(resident: int, limit_mb: int) -> str:
    """The reason a command killed for `resident` bytes under a `limit_mb` limit is given."""
    return f"killed (memory limit {limit_mb} MiB): its processes held {resident >> 20} MiB resident"
