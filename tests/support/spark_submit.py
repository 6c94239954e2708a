"""A stand-in for spark-submit that records its argv and environment, for hosts without a cluster.

The Spark provider runs a binary named ``spark-submit`` (or ``spark2-submit``/``spark3-submit``)
found on ``PATH``; the recorder is an executable of that name put first on ``PATH``. It appends
one JSON line per call (argv, environment) to its record file, writes the configured result to
the application's ``--result-file`` and exits with the configured code.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = """#!{python}
import json, os, sys

record = {{"argv": sys.argv, "environment": dict(os.environ)}}
with open({record_file!r}, "a") as file:
    file.write(json.dumps(record) + "\\n")
arguments = sys.argv[1:]
if "--result-file" in arguments:
    with open(arguments[arguments.index("--result-file") + 1], "w") as file:
        file.write({result!r})
print("recorded spark-submit call")
for line in {stderr_lines!r}:
    print(line, file=sys.stderr)
sys.exit({exit_code})
"""


@dataclass(frozen=True)
class RecordedCall:
    argv: list[str]
    environment: dict[str, str]


class SparkSubmitRecorder:
    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin_dir = folder / "bin"
        self.bin_dir.mkdir(parents=True)
        self.record_file = folder / "calls.jsonl"
        self.executable = self.bin_dir / "spark-submit"
        self.behave(result={})
        monkeypatch.setenv("PATH", str(self.bin_dir) + os.pathsep + os.environ.get("PATH", ""))

    def behave(
        self, *, result: dict[str, Any], exit_code: int = 0, stderr_lines: tuple[str, ...] = ()
    ) -> None:
        """What the next calls write to their result file and stderr, and the code they exit with."""
        self.executable.write_text(
            _SCRIPT.format(
                python=sys.executable,
                record_file=str(self.record_file),
                result=json.dumps(result),
                exit_code=exit_code,
                stderr_lines=list(stderr_lines),
            )
        )
        self.executable.chmod(0o755)

    def calls(self) -> list[RecordedCall]:
        if not self.record_file.exists():
            return []
        return [RecordedCall(**json.loads(line)) for line in self.record_file.read_text().splitlines()]
