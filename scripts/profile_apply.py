#!/usr/bin/env python3
"""Where a row's time goes in one reader, end to end: the binlog application's call under cProfile.

Writes the benchmark suite's workload (``scripts/benchmarks.py``: a mixed 10-column table, half
inserts, 30% updates, 20% deletes) into a private MySQL sandbox (or ``--dsn``), applies it into a
fresh lake in this process (``run_apply``, one reader, the default batch settings) under cProfile,
and prints:

- the time of the whole call and rows/s (cProfile's overhead included: compare stages, not totals);
- for each of the two threads (the binlog reader feeding a bounded queue, and the applier), self
  time per stage, every function's own time assigned to the stage its module belongs to (reading
  the binlog, decoding rows, the change table, Arrow, Delta writes, the pipeline state...); a thread
  waiting for the other shows as lock waits;
- the 25 functions of the package with the most cumulative time in each thread.

    .venv/bin/python scripts/profile_apply.py --rows 200000
    .venv/bin/python scripts/profile_apply.py --rows 200000 --out /tmp/apply.prof   # for snakeviz

cProfile's cost per call inflates call-heavy code (the binary JSON walk) against C calls (Arrow,
Delta). For honest shares, sample instead (py-spy, ``pip install py-spy``), then read the samples:

    py-spy record --format raw --threads --rate 250 -o /tmp/apply.txt -- \
        .venv/bin/python scripts/profile_apply.py --rows 200000 --plain
    .venv/bin/python scripts/profile_apply.py --samples /tmp/apply.txt
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from airflow_mysql_cdc.engine.apply.single_reader import run_apply  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402

STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pipeline state (intents, positions, lease)", ("engine/lake/state/", "engine/lake/batch_commit")),
    ("the batch self-check", ("engine/lake/batch_check", "engine/lake/table_stops")),
    ("MERGE plan and Delta writes (Python side)", ("engine/lake/", "deltalake/")),
    ("change table, last row per key", ("engine/lake/change_table", "engine/lake/change_waves")),
    ("batching and the apply loop", ("engine/apply/",)),
    ("row decoding (compiled decoder, values)", ("engine/binlog/decoding/", "engine/mysql/normalise")),
    ("binlog reading (events, transactions)", ("engine/binlog/", "pymysqlreplication/")),
    ("MySQL protocol and socket", ("pymysql/", "socket", "ssl")),
    ("Arrow", ("pyarrow/",)),
)
"""First match wins: a more specific prefix comes before the folder that holds it."""


def stage_of(filename: str, function: str) -> str:
    """The stage a function's own time belongs to; built-ins by what they are."""
    path = filename.replace("\\", "/")
    if path == "~":  # a built-in: <method 'x' of 'y' objects>, <built-in method z>
        if "deltalake" in function or "_internal" in function:
            return "MERGE plan and Delta writes (native)"
        if "pyarrow" in function or "lib." in function:
            return "Arrow"
        if "socket" in function or "recv" in function or "ssl" in function:
            return "MySQL protocol and socket"
        return "other built-ins (dict, list, struct, json ...)"
    for stage, prefixes in STAGES:
        if any(prefix in path for prefix in prefixes):
            if stage.startswith("MERGE plan") and "engine/lake/change_" in path:
                continue
            return stage
    return "other Python"


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--dsn", help="mysql://user:password@host:port/ (default: start a private sandbox)")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1_000, help="rows per transaction of the workload")
    parser.add_argument("--out", help="also write the raw profile here")
    parser.add_argument("--plain", action="store_true", help="no cProfile (run under a sampler)")
    parser.add_argument("--samples", help="print the stages of a py-spy raw file instead of running")
    args = parser.parse_args(argv)
    if args.samples:
        _print_sampled_stages(Path(args.samples))
        return 0
    benchmarks = _load("benchmarks")
    sandbox = None
    if args.dsn:
        endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    else:
        sandbox = _load("mysql_sandbox")
        datadir = Path(tempfile.mkdtemp(prefix="profile-apply-")) / "data"
        port = sandbox.free_port()
        sandbox.start(port=port, datadir=datadir, server_id=1, log=lambda _: None)
        endpoint = MySqlEndpoint("127.0.0.1", port, "root")
    workdir = Path(tempfile.mkdtemp(prefix="profile-apply-work-"))
    try:
        print(f"load average before: {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
        start, end = benchmarks.write_workload(endpoint, args.rows, args.batch)
        config = benchmarks._bench_config(start, end, workdir / "lake")
        if args.plain:
            began = time.perf_counter()
            result = run_apply(config, endpoint)
            rows, elapsed = sum(result.rows_by_table.values()), time.perf_counter() - began
            print(f"applied {rows:,} rows in {elapsed:.1f} s: {rows / elapsed:,.0f} rows/s")
            return 0
        reader_profile = _profile_the_reader_thread()
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        result = run_apply(config, endpoint)
        profiler.disable()
        elapsed = time.perf_counter() - began
        rows = sum(result.rows_by_table.values())
        print(f"applied {rows:,} rows in {elapsed:.1f} s under cProfile: {rows / elapsed:,.0f} rows/s")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        for name, profile in (("reader thread", reader_profile), ("applier thread", profiler)):
            stats = pstats.Stats(profile)
            if args.out:
                stats.dump_stats(f"{args.out}.{name.split()[0]}")
            print(f"\n== {name}")
            _print_stages(stats)
            print(f"\n{name}: the package's functions by cumulative time:")
            stats.sort_stats("cumulative").print_stats("airflow_mysql_cdc", 25)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if sandbox is not None:
            sandbox.stop(datadir=datadir, log=lambda _: None)
    return 0


def _profile_the_reader_thread() -> cProfile.Profile:
    """A profiler that the binlog reader thread of the next ``run_apply`` runs under."""
    from airflow_mysql_cdc.engine.apply import reading

    profile = cProfile.Profile()
    unprofiled = reading._ReaderThread.run

    def run(thread: reading._ReaderThread) -> None:
        profile.enable()
        try:
            unprofiled(thread)
        finally:
            profile.disable()

    reading._ReaderThread.run = run  # type: ignore[method-assign]
    return profile


def _print_stages(stats: pstats.Stats) -> None:
    totals: dict[str, float] = {}
    for (filename, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        stage = stage_of(filename, function)
        totals[stage] = totals.get(stage, 0.0) + own
    whole = sum(totals.values())
    print("\nself time per stage:")
    for stage, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"  {seconds:7.2f} s  {100 * seconds / whole:5.1f}%  {stage}")


def _print_sampled_stages(raw: Path) -> None:
    """Samples of the two threads of ``run_apply`` by stage of their innermost frame of ours or a
    library's (py-spy's raw format: ``thread;frame;...;frame count``, frames ``name (file:line)``)."""
    threads: dict[str, dict[str, int]] = {"reader thread": {}, "applier thread": {}}
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        frames = stack.split(";")
        if "binlog-reader" in frames[0]:
            thread = "reader thread"
        elif any(frame.startswith("read_into_sink (") for frame in frames):
            thread = "applier thread"
        else:
            continue  # the workload, the sandbox, start-up
        leaf = frames[-1]
        function, _, where = leaf.partition(" (")
        filename = where.rsplit(":", 1)[0]
        if "threading.py" in filename or "queue.py" in filename:
            stage = "waiting for the other thread (queue)"
        else:
            stage = stage_of(filename or "~", function)
        threads[thread][stage] = threads[thread].get(stage, 0) + int(count_text)
    for thread, stages in threads.items():
        whole = sum(stages.values()) or 1
        print(f"\n== {thread}: {whole} samples")
        for stage, count in sorted(stages.items(), key=lambda item: -item[1]):
            print(f"  {count:7d}  {100 * count / whole:5.1f}%  {stage}")


def _load(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    raise SystemExit(main())
