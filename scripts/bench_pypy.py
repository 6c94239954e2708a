#!/usr/bin/env python3
"""The bare mysql-replication loop under PyPy next to CPython, and what shipping its rows to CPython costs.

The issue's avenue: a reader process under PyPy feeding the (CPython) Spark application. This
script measures its two halves on one workload, ``scripts/benchmarks.py``'s mixed 10-column table
(``--rows`` row changes, written by CPython with that script's ``write_workload``):

* ``bare``: the bare loop of ``scripts/benchmarks.py`` (the engine's library settings, each row
  touched once), run as a child process by PyPy and by CPython; each child times its own loop.
* ``pipe``: the same loop, but each rows event becomes a list of ``(kind, values tuple)`` (updates
  carry before and after) serialised into a length-prefixed frame on stdout; the CPython parent
  reads and decodes every frame as it arrives. ``--codec pickle`` (protocol 5) ships the library's
  values as they are; ``--codec marshal`` first turns Decimal and datetime into text and JSON into
  the engine's sorted compact text (marshal knows only builtins), and the parent rebuilds the
  Decimal and datetime values. Reported: the child's decode + serialise rate, the parent's rate
  over its decoding time alone, and the end to end rate (child start to the last frame decoded).

Runs alternate between the interpreters; medians of ``--runs`` are printed. The child side imports
only pymysql and pymysqlreplication (pyarrow and so this package have no PyPy build), so the
same file is the PyPy child:

    python3 scripts/pypy_sandbox.py         # once: Debian bookworm's pypy3 into .cache/pypy
    python3 scripts/mysql_sandbox.py --datadir .cache/mysql-sandbox/data/pypy start --port 13399
    .venv/bin/python scripts/bench_pypy.py --port 13399 --rows 100000 --runs 3
    .venv/bin/python scripts/bench_pypy.py --port 13399 --rows 100000 --runs 3 --codec marshal
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import importlib.util
import json
import marshal
import os
import pickle
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

FRAME = struct.Struct("<I")
SCHEMA, TABLE = "bench", "mixed"  # scripts/benchmarks.py's workload


# --- the child: only pymysql and pymysqlreplication ----------------------------------------------------


def _stream(port: int, start: str):
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    return BinLogStreamReader(
        connection_settings={"host": "127.0.0.1", "port": port, "user": "root", "passwd": ""},
        server_id=3_000_301,
        auto_position=start,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        freeze_schema=True,
        only_schemas=[SCHEMA],
        only_tables=[TABLE],
    )


def child_bare(port: int, start: str) -> dict:
    began = time.perf_counter()
    stream = _stream(port, start)
    count = 0
    try:
        for event in stream:
            for _row in event.rows:
                count += 1
    finally:
        stream.close()
    return {"rows": count, "seconds": time.perf_counter() - began}


def _plain(value):
    """A marshal-able stand-in: Decimal and datetime as text, JSON as the engine's sorted compact text."""
    if isinstance(value, (decimal.Decimal, datetime.datetime)):
        return str(value)
    if isinstance(value, dict):
        return json.dumps(_json_text(value), sort_keys=True, separators=(",", ":"), default=str)
    return value


def _json_text(value):
    if isinstance(value, dict):
        return {_json_text(key): _json_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_text(item) for item in value]
    if isinstance(value, bytes):
        return value.decode()
    return value


def child_pipe(port: int, start: str, codec: str) -> dict:
    from pymysqlreplication.row_event import UpdateRowsEvent, WriteRowsEvent

    began = time.perf_counter()
    out = sys.stdout.buffer
    stream = _stream(port, start)
    count = 0

    def image(values) -> tuple:
        return tuple(values) if codec == "pickle" else tuple([_plain(value) for value in values])

    try:
        for event in stream:
            if isinstance(event, UpdateRowsEvent):
                batch = [
                    ("u", image(row["before_values"].values()), image(row["after_values"].values()))
                    for row in event.rows
                ]
            else:
                kind = "i" if isinstance(event, WriteRowsEvent) else "d"
                batch = [(kind, image(row["values"].values())) for row in event.rows]
            frame = pickle.dumps(batch, protocol=5) if codec == "pickle" else marshal.dumps(batch)
            out.write(FRAME.pack(len(frame)))
            out.write(frame)
            count += len(batch)
    finally:
        stream.close()
    out.flush()
    return {"rows": count, "seconds": time.perf_counter() - began}


# --- the parent: CPython, writes the workload and runs the children ------------------------------------


def run_bare(python: list[str], env: dict[str, str], port: int, start: str) -> dict:
    argv = [*python, __file__, "--child", "bare", "--port", str(port), "--start", start]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _rebuild(values: tuple) -> tuple:
    """What the CPython side pays to get the marshal codec's text back into Decimal and datetime."""
    rebuilt = list(values)
    rebuilt[3] = decimal.Decimal(rebuilt[3])  # price; the workload's columns have no NULLs here
    rebuilt[7] = datetime.datetime.fromisoformat(rebuilt[7])
    rebuilt[8] = datetime.datetime.fromisoformat(rebuilt[8])
    return tuple(rebuilt)


def run_pipe(python: list[str], env: dict[str, str], port: int, start: str, codec: str) -> dict:
    argv = [*python, __file__, "--child", "pipe", "--codec", codec, "--port", str(port), "--start", start]
    began = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1 << 20)
    rows = 0
    loads_seconds = 0.0
    read = child.stdout.read
    while header := read(FRAME.size):
        frame = read(FRAME.unpack(header)[0])
        t0 = time.perf_counter()
        if codec == "pickle":
            batch = pickle.loads(frame)
        else:
            batch = [(row[0], *map(_rebuild, row[1:])) for row in marshal.loads(frame)]
        loads_seconds += time.perf_counter() - t0
        rows += len(batch)
    end_to_end = time.perf_counter() - began
    if child.wait() != 0:
        raise SystemExit(f"pipe child failed: {child.stderr.read().decode()[-2000:]}")
    report = json.loads(child.stderr.read())
    return {
        "rows": rows,
        "child_rows": report["rows"],
        "decode_serialize": report["seconds"],
        "loads": loads_seconds,
        "end_to_end": end_to_end,
    }


def _load_script(name: str):
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=13399, help="a running sandbox server on 127.0.0.1")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-pipe", action="store_true", help="only the bare loops")
    parser.add_argument(
        "--codec", choices=("pickle", "marshal"), default="pickle", help="the pipe's serialisation"
    )
    parser.add_argument("--child", choices=("bare", "pipe"), help=argparse.SUPPRESS)
    parser.add_argument("--start", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child == "bare":
        print(json.dumps(child_bare(args.port, args.start)))
        return 0
    if args.child == "pipe":
        sys.stderr.write(json.dumps(child_pipe(args.port, args.start, args.codec)))
        return 0

    pypy_sandbox = _load_script("pypy_sandbox")
    pypy, _site = pypy_sandbox.install()
    benchmarks = _load_script("benchmarks")
    endpoint = benchmarks.MySqlEndpoint("127.0.0.1", args.port, "root")
    start, end = benchmarks.write_workload(endpoint, args.rows, args.batch)
    start_text = start.to_replication_position()
    interpreters = {
        "PyPy": ([str(pypy)], pypy_sandbox.environment()),
        "CPython": ([sys.executable], dict(os.environ)),
    }
    for name, (python, env) in interpreters.items():
        version = subprocess.run(
            [*python, "-c", "import sys; print(sys.version.split()[0], sys.implementation.name)"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        print(f"{name}: {python[0]} ({version})")
    print(f"workload: {args.rows} row changes on {SCHEMA}.{TABLE}, {(end - start).count()} transactions")
    print(f"load average before: {os.getloadavg()}")

    bare: dict[str, list[float]] = {name: [] for name in interpreters}
    pipe: dict[str, list[dict]] = {name: [] for name in interpreters}
    for run in range(args.runs):
        order = list(interpreters) if run % 2 == 0 else list(reversed(interpreters))
        for name in order:
            result = run_bare(*interpreters[name], args.port, start_text)
            if result["rows"] != args.rows:
                raise SystemExit(f"{name} bare loop read {result['rows']} rows, expected {args.rows}")
            bare[name].append(result["seconds"])
            print(f"  run {run + 1} bare {name}: {args.rows / result['seconds']:,.0f} rows/s", flush=True)
        if args.skip_pipe:
            continue
        for name in order:
            result = run_pipe(*interpreters[name], args.port, start_text, args.codec)
            if result["rows"] != args.rows or result["child_rows"] != args.rows:
                raise SystemExit(f"{name} pipe shipped {result['rows']} rows, expected {args.rows}")
            pipe[name].append(result)
            print(
                f"  run {run + 1} pipe {name}: "
                f"decode+serialize {args.rows / result['decode_serialize']:,.0f}, "
                f"CPython decoding {args.rows / result['loads']:,.0f}, "
                f"end to end {args.rows / result['end_to_end']:,.0f} rows/s",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")

    def rate(seconds: list[float]) -> str:
        runs = ", ".join(f"{args.rows / value:,.0f}" for value in seconds)
        return f"{args.rows / statistics.median(seconds):>8,.0f} rows/s  (runs: {runs})"

    for name in interpreters:
        print(f"bare loop, {name:<8}                           {rate(bare[name])}")
    speedup = statistics.median(bare["CPython"]) / statistics.median(bare["PyPy"])
    print(f"ratio PyPy / CPython, bare loop: {speedup:.2f}")
    for name in interpreters if not args.skip_pipe else ():
        results = pipe[name]
        serialise = rate([r["decode_serialize"] for r in results])
        print(f"pipe, {name:<8} decode + {args.codec} (child)     {serialise}")
        print(f"pipe, {name:<8} CPython side, decoding only {rate([r['loads'] for r in results])}")
        print(f"pipe, {name:<8} end to end (CPython gets rows) {rate([r['end_to_end'] for r in results])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
