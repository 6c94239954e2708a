#!/usr/bin/env python3
"""The binlog reader against a bare mysql-replication loop: sections 1 and 2 of the benchmark suite.

Runs ``scripts/benchmarks.py`` with every other section skipped: the bare loop (the baseline), the
engine's ``BinlogReader``, and the engine with its row images decoded by the library. Arguments go
to the suite (``--dsn``, ``--rows``, ``--runs``, ``--batch``). The figures recorded under "Binlog
reader" in docs/benchmarks.md were measured by this script's earlier, self-contained version
(commit c0db2a0; a TEXT column where the suite's table has a BLOB), before the compiled decoder.

    .venv/bin/python scripts/bench_reader.py --rows 200000 --runs 3
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchmarks  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return benchmarks.main(["--skip", "apps,phases,snapshot,live", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
