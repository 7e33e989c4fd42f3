"""Limiting a command by the memory its processes hold resident, watched from the host (bwrap).

An address-space rlimit counts what a process reserves, not what it uses: V8 reserves its code range
and WebAssembly's guard regions, Go its arenas and the JVM its heap far past what they touch. The watch
sums the proportional set size (PSS: a page shared by forked processes counts once, split between
them) of every process descended from the command's (the sandbox's own pid namespace is still visible
from the host's /proc) every INTERVAL_S; past the limit the whole tree is killed and the command is
reported killed by the limit, never as a failing test. A spike shorter than one interval may pass
unseen: the limit keeps a run from holding the host's memory, not every page.
"""

from __future__ import annotations

import os
from pathlib import Path

INTERVAL_S = 0.1


def _parent(pid: str, proc: Path) -> int | None:
    """A process's parent pid, or None when it is gone."""
    try:
        text = (proc / pid / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after its last ")" are fixed.
    return int(text[text.rfind(")") + 2 :].split()[1])


def _proportional(pid: int, proc: Path) -> int:
    """A process's PSS in bytes (0 when it is gone)."""
    try:
        for line in (proc / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) << 10
    except (OSError, ValueError):
        pass
    return 0


def tree_resident(root: int, proc: Path = Path("/proc")) -> int:
    """Bytes `root` and every process descended from it hold resident, shared pages counted once (PSS)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir(proc):
        if name.isdigit() and (parent := _parent(name, proc)) is not None:
            children.setdefault(parent, []).append(int(name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _proportional(pid, proc)
        todo += children.get(pid, [])
    return total


def over_limit(resident: int, limit_mb: int) -> str:
    """The reason a command killed for `resident` bytes under a `limit_mb` limit is given."""
    return f"killed (memory limit {limit_mb} MiB): its processes held {resident >> 20} MiB resident"
