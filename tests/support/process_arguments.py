"""Watch the argv of every process on the host (``/proc/*/cmdline``) for a secret while code runs."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType


def command_lines() -> dict[int, str]:
    """Every readable process's argv, joined by spaces."""
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
        except OSError:  # the process ended meanwhile
            continue
        lines[int(entry.name)] = argv.replace(b"\0", b" ").decode(errors="replace")
    return lines


class ArgvWatch:
    """Scans all command lines every ``interval_s`` until exit; keeps those holding ``secret``.

    ``seen`` keeps every command line holding one of ``markers`` (to show that a process, such as
    an executor, existed during the run). A secret found is reported with the secret masked.
    """

    def __init__(self, secret: str, *, markers: tuple[str, ...] = (), interval_s: float = 0.25) -> None:
        self.secret = secret
        self.markers = markers
        self.interval_s = interval_s
        self.exposed: dict[int, str] = {}
        self.seen: dict[int, str] = {}
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="argv-watch", daemon=True)

    def _run(self) -> None:
        while True:
            for pid, line in command_lines().items():
                if self.secret in line:
                    self.exposed[pid] = line.replace(self.secret, "***")
                if any(marker in line for marker in self.markers):
                    self.seen[pid] = line
            self.scans += 1
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> ArgvWatch:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
