"""Entry point of the snapshot application: ``spark-submit <this file> --config C --result-file R``.

Windows run as Spark tasks, one per chunk, each with its own MySQL connections and its own
replication server_id (``base_server_id + chunk index``) for reconciliation; the driver commits
each finished chunk to Delta as it arrives. With ``--no-spark`` (tests, tiny tables) windows run
one after another in this process. Credentials come only from ``AIRFLOW_MYSQL_CDC_ENDPOINT``.

Exit codes: 0 done; 2 configuration error (including a table without a usable key); 1 other.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.entrypoints.common import (
    ERROR_PREFIX,
    EXIT_CONFIG,
    argument_parser,
    configure_logging,
    exit_hard,
    write_result_atomically,
)
from airflow_mysql_cdc.engine.gtid import GtidSet
from airflow_mysql_cdc.engine.snapshot.chunks import NoRowKeyError
from airflow_mysql_cdc.engine.snapshot.runner import (
    WindowRunner,
    WindowTask,
    run_sequentially,
    snapshot_table,
)
from airflow_mysql_cdc.engine.snapshot.window import ChunkSnapshot


@dataclass(frozen=True)
class SnapshotConfig:
    lake_root: str
    tables: tuple[str, ...]
    chunk_size: int = 50_000
    restart: bool = False
    base_server_id: int | None = None
    storage_options: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_file(cls, path: Path) -> SnapshotConfig:
        data = json.loads(path.read_text())
        if any(key in data for key in ("password", "user", "host")):
            raise ValueError("credentials do not belong in the configuration: pass them in the environment")
        data["tables"] = tuple(data.get("tables") or ())
        if not data["tables"]:
            raise ValueError("tables is empty: name at least one schema.table")
        return cls(**data)


def spark_runner(app_name: str) -> WindowRunner:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(app_name).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    # Waves of 2x the cluster's parallelism: every task of a wave runs at once, and the driver
    # commits a wave's chunks (and so persists progress) before starting the next.
    wave = max(1, 2 * spark.sparkContext.defaultParallelism)

    def run(tasks: Sequence[WindowTask]) -> Iterator[ChunkSnapshot]:
        for start in range(0, len(tasks), wave):
            group = list(tasks[start : start + wave])
            rdd = spark.sparkContext.parallelize(group, numSlices=len(group))
            yield from rdd.map(lambda task: task.run()).collect()

    return run


def run(config: SnapshotConfig, endpoint: MySqlEndpoint, runner: WindowRunner) -> dict[str, Any]:
    results = [
        snapshot_table(
            endpoint,
            config.lake_root,
            table,
            chunk_size=config.chunk_size,
            run_windows=runner,
            restart=config.restart,
            base_server_id=config.base_server_id,
            storage_options=config.storage_options or None,
        )
        for table in config.tables
    ]
    starts = [GtidSet.parse(result.stream_start) for result in results]
    stream_start = starts[0]
    for start in starts[1:]:
        stream_start &= start
    return {"tables": [r.to_dict() for r in results], "stream_start": str(stream_start)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser("Snapshot MySQL tables into Delta tables")
    parser.add_argument("--no-spark", action="store_true", help="run windows one by one in this process")
    args = parser.parse_args(argv)
    configure_logging()
    try:
        config = SnapshotConfig.from_file(args.config)
        endpoint = MySqlEndpoint.from_environment()
    except (LookupError, ValueError, TypeError) as error:
        print(f"{ERROR_PREFIX} configuration: {error}", file=sys.stderr)
        return EXIT_CONFIG
    runner = run_sequentially if args.no_spark else spark_runner("mysql-cdc-snapshot")
    try:
        result = run(config, endpoint, runner)
    except (NoRowKeyError, LookupError) as error:
        print(f"{ERROR_PREFIX} snapshot: {error}", file=sys.stderr)
        return EXIT_CONFIG
    write_result_atomically(args.result_file, result)
    return 0


if __name__ == "__main__":
    exit_hard(main)
