"""The private parts of mysql-replication and PyMySQL we rely on exist, and only one module uses them."""

from __future__ import annotations

import re
from pathlib import Path

import airflow_mysql_cdc.engine as engine
from airflow_mysql_cdc.engine.binlog.internals import PRIVATE_PARTS, missing_private_parts

_PRIVATE_ACCESS = re.compile(r"_BinLog\w+__|\._(ctl_connection|read_packet|data|position)\b")


def test_the_private_parts_we_use_exist_in_the_installed_libraries() -> None:
    assert missing_private_parts() == [], (
        "an upgrade of mysql-replication or PyMySQL moved a private part the engine reaches "
        "(engine/binlog/internals.py): adapt that module before using the new version"
    )
    assert len(PRIVATE_PARTS) >= 5


def test_no_other_engine_module_reaches_into_the_libraries() -> None:
    root = Path(engine.__file__).parent
    users = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "internals.py" and _PRIVATE_ACCESS.search(path.read_text())
    ]
    assert users == []
