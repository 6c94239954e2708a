"""The prerequisites report: one result per check, rendered for the task log and sent to XCom.

Invariant: a report is plain data (JSON-serialisable through :meth:`PrerequisiteReport.to_dict`),
so XCom and downstream tasks can read it without this package.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Literal

Status = Literal["ok", "warning", "error"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    expected: str
    actual: str
    why: str
    fix: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class PrerequisiteReport:
    server: str
    server_version: str
    results: tuple[CheckResult, ...] = field(default_factory=tuple)

    @property
    def errors(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "error"]

    @property
    def warnings(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {
            "server": self.server,
            "server_version": self.server_version,
            "ok": self.ok,
            "error_count": len(self.errors),
            "warning_count": len(self.warnings),
            "results": [asdict(r) for r in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def render_table(self) -> str:
        """One readable table for the task log, failures first, then how to fix each."""
        ordered = sorted(self.results, key=lambda r: {"error": 0, "warning": 1, "ok": 2}[r.status])
        headers = ("status", "check", "expected", "actual")
        rows = [(r.status.upper(), r.name, r.expected, _clip(r.actual)) for r in ordered]
        widths = [max([len(header)] + [len(row[i]) for row in rows]) for i, header in enumerate(headers)]
        line = "  ".join(f"{{:<{width}}}" for width in widths)
        out = [line.format(*headers), line.format(*("-" * w for w in widths))]
        out += [line.format(*row) for row in rows]
        failing = [r for r in ordered if r.status != "ok"]
        if failing:
            out.append("")
            for r in failing:
                out.append(f"{r.status.upper()} {r.name}: {r.why}")
                out.append(f"    fix: {r.fix}")
        verdict = "PASSED" if self.ok else "FAILED"
        out.append("")
        out.append(
            f"{verdict}: {len(self.errors)} error(s), {len(self.warnings)} warning(s), "
            f"{len(self.results) - len(failing)} passed on {self.server} (MySQL {self.server_version})"
        )
        return "\n".join(out)


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
