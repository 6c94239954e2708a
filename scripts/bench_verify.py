"""What one verification of a table costs: a table of ``--rows`` rows on the MySQL sandbox,
snapshotted and streamed into a temporary lake, then verified ``--repeat`` times with the pipeline's
defaults (``sample``: 4 chunks of 50,000 rows) or ``--mode full``. Prints seconds and the process's
peak memory (the whole target is read once per verification: docs/operations.md, "Verifying the lake").

    scripts/mysql-sandbox start
    .venv/bin/python scripts/bench_verify.py --rows 1000000
    .venv/bin/python scripts/bench_verify.py --rows 1000000 --mode full
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airflow_mysql_cdc.engine.apply.config import ApplyConfig  # noqa: E402
from airflow_mysql_cdc.engine.apply.single_reader import run_apply  # noqa: E402
from airflow_mysql_cdc.engine.lake.state.store import LakeState  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.verify.run import verify_lake  # noqa: E402
from airflow_mysql_cdc.engine.verify.settings import VerifySettings  # noqa: E402
from tests.support.lake import ConcurrentWriter  # noqa: E402
from tests.support.mysql import execute  # noqa: E402

DATABASE = "bench_verify"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--mode", choices=("sample", "full"), default="sample")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    server = MySqlEndpoint.from_url(args.dsn).with_database(None)
    execute(server, f"DROP DATABASE IF EXISTS {DATABASE}", f"CREATE DATABASE {DATABASE}")
    source = server.with_database(DATABASE)
    execute(source, ConcurrentWriter.DDL)
    for start in range(1, args.rows + 1, 20_000):
        ids = range(start, min(start + 20_000, args.rows + 1))
        execute(
            source,
            "INSERT INTO orders VALUES "
            + ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in ids),
        )
    lake = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    table = f"{DATABASE}.orders"
    snapshot = snapshot_table(source, lake, table, chunk_size=50_000)
    run_apply(
        ApplyConfig(pipeline_id="bench", lake_root=str(lake), tables=(table,),
                    start_gtids=snapshot.stream_start, mode="until_caught_up"),
        source,
    )  # fmt: skip
    for _ in range(args.repeat):
        started = time.monotonic()
        report = verify_lake(LakeState(lake, "bench"), source, [table], VerifySettings(mode=args.mode))
        (result,) = report.tables
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{args.mode} verification of a {args.rows}-row table: {time.monotonic() - started:.1f} s, "
            f"{result.status}, {result.rows_compared} rows compared, peak memory {peak_mib:.0f} MiB",
            flush=True,
        )
    execute(server, f"DROP DATABASE {DATABASE}")


if __name__ == "__main__":
    main()
