"""The demo of the README: a sample shop schema on the sandbox, some writes, and the GTID state.

At this stage of the project the demo shows the foundation: a CDC-ready MySQL server and the
GTID algebra every checkpoint uses. Later stages replace it with the full snapshot + binlog run.
"""

from __future__ import annotations

import argparse
import random

from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.server_state import read_server_state

SCHEMA = (
    "CREATE DATABASE IF NOT EXISTS demo_shop",
    """CREATE TABLE IF NOT EXISTS demo_shop.customers (
        id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
        email VARCHAR(190) NOT NULL UNIQUE,
        name VARCHAR(100) NOT NULL,
        created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
    )""",
    """CREATE TABLE IF NOT EXISTS demo_shop.orders (
        id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
        customer_id BIGINT UNSIGNED NOT NULL,
        total DECIMAL(12, 2) NOT NULL,
        status ENUM('new', 'paid', 'shipped', 'cancelled') NOT NULL DEFAULT 'new',
        details JSON,
        updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
    )""",
)


def write_sample_transactions(endpoint: MySqlEndpoint, count: int, rng: random.Random) -> None:
    with endpoint.connect(autocommit=False) as connection, connection.cursor() as cursor:
        for _ in range(count):
            suffix = rng.randrange(10**9)
            cursor.execute(
                "INSERT INTO demo_shop.customers (email, name) VALUES (%s, %s)",
                (f"user{suffix}@example.com", f"Customer {suffix}"),
            )
            customer_id = cursor.lastrowid
            cursor.execute(
                "INSERT INTO demo_shop.orders (customer_id, total, details) VALUES (%s, %s, %s)",
                (customer_id, rng.randrange(100, 100000) / 100, '{"items": 1}'),
            )
            connection.commit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--transactions", type=int, default=20)
    args = parser.parse_args()
    endpoint = MySqlEndpoint.from_url(args.dsn)

    before = _state(endpoint)
    with endpoint.connect() as connection, connection.cursor() as cursor:
        for statement in SCHEMA:
            cursor.execute(statement)
    write_sample_transactions(endpoint, args.transactions, random.Random())
    after = _state(endpoint)

    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT COUNT(*) FROM demo_shop.customers), (SELECT COUNT(*) FROM demo_shop.orders)"
        )
        customers, orders = cursor.fetchone()
    new_transactions = after.gtid_executed - before.gtid_executed
    print()
    print(f"server         {endpoint}  MySQL {after.version} ({after.flavor})")
    print(f"server_uuid    {after.server_uuid}")
    print(f"binary log     {after.binary_log.file if after.binary_log else 'OFF'}")
    print(f"gtid_executed  {after.gtid_executed}")
    print(f"gtid_purged    {after.gtid_purged or '(empty)'}")
    print(f"this run wrote {new_transactions.count()} transactions: {new_transactions}")
    print(f"demo_shop      customers={customers} orders={orders}")
    print()
    print("Query it yourself: scripts/mysql-sandbox sql 'SELECT * FROM demo_shop.orders LIMIT 5'")


def _state(endpoint: MySqlEndpoint):
    with endpoint.connect() as connection:
        return read_server_state(connection)


if __name__ == "__main__":
    main()
