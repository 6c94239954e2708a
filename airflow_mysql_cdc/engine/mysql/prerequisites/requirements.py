"""What a source server must be set to for CDC: ONE table, read by the prerequisite report and the stream.

Invariant: a required setting is written once, here, with its reason and its fix. The prerequisites
operator reports every row (:func:`.checks.check_settings`); the binlog stream re-checks the rows
marked ``checked_by_stream`` before every read (``ControlConnection.check_settings`` in
:mod:`~airflow_mysql_cdc.engine.binlog.stream`), because they can change between runs and a read
under them would silently lose or misread data. Both say the same ``why``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequiredSetting:
    name: str
    """The global variable (its new name; MySQL 8.0.x before 8.0.26 names are mapped when read)."""
    expected: str
    why: str
    """What goes wrong under any other value: the sentence a data engineer reads."""
    fix: str
    accepted: tuple[str, ...] = ()
    """Other spellings of ``expected`` the server may report (``log_bin`` = 1)."""
    checked_by_stream: bool = False
    """The binlog stream refuses to read while the setting differs (besides the report)."""
    fixes_by_value: tuple[tuple[str, str], ...] = ()
    """``(value, fix)``: a shorter way out from that value than :attr:`fix` (the last step only)."""

    def is_met_by(self, value: str) -> bool:
        return value.upper() in {self.expected.upper(), *(spelling.upper() for spelling in self.accepted)}

    def fix_for(self, value: str) -> str:
        """The fix to show to a server that has ``value``."""
        return next((fix for known, fix in self.fixes_by_value if known.upper() == value.upper()), self.fix)


REQUIRED_SETTINGS: tuple[RequiredSetting, ...] = (
    RequiredSetting(
        "log_bin", "ON",
        "changes are read from the binary log",
        "start mysqld with binary logging on (remove --skip-log-bin / --disable-log-bin; "
        "log_bin is not dynamic) and restart",
        accepted=("1",),
    ),
    RequiredSetting(
        "gtid_mode", "ON",
        "checkpoints, resumption and snapshot watermarks are GTID sets; under any other mode "
        "(OFF_PERMISSIVE and ON_PERMISSIVE too; Aurora's GTID guide allows ON_PERMISSIVE) the server "
        "accepts anonymous transactions, which have no GTID, so no GTID position can see them and "
        "a run would pass their changes by without a trace",
        "SET PERSIST enforce_gtid_consistency = ON; then step gtid_mode through "
        "OFF_PERMISSIVE, ON_PERMISSIVE and ON with SET PERSIST gtid_mode = ... (wait for "
        "Ongoing_anonymous_transaction_count = 0 before the last step); RDS/Aurora: gtid-mode = ON "
        "in the DB (cluster) parameter group (docs/platforms/aurora.md)",
        fixes_by_value=(
            (
                "ON_PERMISSIVE",
                "wait until SHOW GLOBAL STATUS LIKE 'Ongoing_anonymous_transaction_count' is 0 (and no "
                "replica of this server still sends anonymous transactions), then SET PERSIST gtid_mode = "
                "ON; on Aurora/RDS set gtid_mode = ON in the DB cluster (instance) parameter group "
                "(docs/platforms/aurora.md); re-snapshot the tables, since anonymous changes before "
                "that point are in no checkpoint",
            ),
        ),
        checked_by_stream=True,
    ),
    RequiredSetting(
        "enforce_gtid_consistency", "ON",
        "gtid_mode=ON requires it; statements that cannot be logged with a GTID are refused",
        "SET PERSIST enforce_gtid_consistency = ON;",
    ),
    RequiredSetting(
        "binlog_format", "ROW",
        "only row events carry the changed rows; STATEMENT/MIXED events cannot be applied",
        "SET PERSIST binlog_format = 'ROW'; (sessions already open keep their format)",
        checked_by_stream=True,
    ),
    RequiredSetting(
        "binlog_row_image", "FULL",
        "MINIMAL/NOBLOB images omit columns, so the lake copy would lose values",
        "SET PERSIST binlog_row_image = 'FULL';",
        checked_by_stream=True,
    ),
    RequiredSetting(
        "binlog_row_metadata", "FULL",
        "without FULL metadata the binlog has no column names: the reader would see "
        "UNKNOWN_COLn, wrong unsigned values and no ENUM/SET values",
        "SET PERSIST binlog_row_metadata = 'FULL';",
        checked_by_stream=True,
    ),
    RequiredSetting(
        "binlog_row_value_options", "",
        "PARTIAL_JSON logs JSON updates as diffs the reader cannot apply to a full value",
        "SET PERSIST binlog_row_value_options = '';",
    ),
)  # fmt: skip

STREAM_SETTINGS: tuple[RequiredSetting, ...] = tuple(s for s in REQUIRED_SETTINGS if s.checked_by_stream)

# Types the pipeline can carry (binlog decoding and the snapshot share one mapping). VECTOR (9.0+)
# and anything newer are rejected until the mapping learns them.
CARRIED_DATA_TYPES = frozenset(
    (
        "tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double",
        "date", "datetime", "timestamp", "time", "year",
        "char", "varchar", "tinytext", "text", "mediumtext", "longtext",
        "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob",
        "json", "enum", "set", "bit",
        "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
        "geometrycollection", "geomcollection",
    )
)  # fmt: skip
