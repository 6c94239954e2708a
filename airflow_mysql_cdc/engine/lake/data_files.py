"""Data files written by whoever holds the rows (a Spark executor), committed later by the driver.

A snapshot window's rows become one Parquet file under its target table's location, written with
pyarrow where the window was read; only a :class:`DataFile` (name, size, row count, Delta column
statistics: a few hundred bytes) goes back to the driver, which commits the files in Delta
transactions (:mod:`airflow_mysql_cdc.engine.snapshot.lake_commits`). So the rows never pass
through the driver, and an executor needs pyarrow but not deltalake.

Invariant: a file is part of the table only once a commit references it. A task killed after
writing, or a task Spark ran twice, leaves a file no commit names: readers never see it, and the
lake maintenance's vacuum deletes it once it is older than the table's deleted-file retention. Each
file has a new random name, so no write ever replaces a file a commit references.

Where executors write: local paths (``/...``, ``file://``; on a cluster only if the path is the same
shared file system on every host, which the driver checks before it commits) and S3 (``s3://``,
``s3a://``), with the lake's delta-rs storage options translated for pyarrow. Other stores
(``gs://``, ``abfss://``) are not written by executors: their rows still go to the driver
(:func:`executor_writes_supported`).

The statistics are exact bounds, so a Delta reader (or a MERGE pruning files by key range) skips
a file only if no row in it could match: ``numRecords`` and ``nullCount`` of every column, and the
minimum and maximum of integer, date and string (up to 64 characters) columns; other types get no
bounds, which costs skipping, never correctness.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airflow_mysql_cdc.engine.errors import ConfigurationError

_EXECUTOR_WRITE_SCHEMES = ("file", "s3", "s3a")
_MAX_STRING_BOUND = 64


@dataclass(frozen=True)
class DataFile:
    """A written Parquet file of a table: what its Delta add action needs."""

    path: str
    """Relative to the table's location (Delta add actions name files so)."""
    size: int
    rows: int
    stats: str
    """Delta column statistics (JSON)."""
    modification_time_ms: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DataFile:
        return cls(**data)


class DataFileMissingError(ConfigurationError):
    """A file an executor reported written is not where the driver looks (a local, unshared path)."""


def executor_writes_supported(table_uri: str) -> bool:
    """Whether executors write this table's data files themselves (else the driver writes them)."""
    text = str(table_uri)
    return _is_local(text) or urlparse(text).scheme.lower() in _EXECUTOR_WRITE_SCHEMES


def write_data_file(table_uri: str, data: pa.Table, storage_options: dict[str, str] | None) -> DataFile:
    """Write ``data`` as a new Parquet file under ``table_uri``; nothing references it yet."""
    filesystem, base = file_system(table_uri, storage_options)
    name = f"part-00000-{uuid.uuid4()}-c000.zstd.parquet"
    path = f"{base.rstrip('/')}/{name}"
    if isinstance(filesystem, pafs.LocalFileSystem):
        filesystem.create_dir(base, recursive=True)
    with filesystem.open_output_stream(path) as sink:
        pq.write_table(data, sink, compression="zstd")
    size = filesystem.get_file_info(path).size
    return DataFile(
        path=name,
        size=int(size or 0),
        rows=data.num_rows,
        stats=delta_statistics(data),
        modification_time_ms=int(time.time() * 1000),
    )


def require_written(table_uri: str, files: list[DataFile], storage_options: dict[str, str] | None) -> None:
    """Raise :class:`DataFileMissingError` unless each file is where the driver commits it, at its size."""
    filesystem, base = file_system(table_uri, storage_options)
    infos = filesystem.get_file_info([f"{base.rstrip('/')}/{file.path}" for file in files])
    for file, info in zip(files, infos, strict=True):
        if info.type != pafs.FileType.File or info.size != file.size:
            raise DataFileMissingError(
                f"a snapshot file an executor wrote ({file.path}, {file.size} bytes) is not at "
                f"{table_uri} as the driver sees it. The lake is a local path that is not the same "
                "shared file system on the Spark executors' hosts and the Airflow worker: put the lake "
                "on an object store (s3://...) or a file system mounted at the same path everywhere. "
                "Nothing was committed; the snapshot resumes from its last committed chunk."
            )


def file_system(table_uri: str, storage_options: dict[str, str] | None) -> tuple[pafs.FileSystem, str]:
    """A pyarrow file system reaching ``table_uri`` with the lake's delta-rs options, and the path in it."""
    text = str(table_uri)
    if _is_local(text):
        return pafs.LocalFileSystem(), text
    parsed = urlparse(text)
    scheme = parsed.scheme.lower()
    if scheme == "file":
        return pafs.LocalFileSystem(), parsed.path
    if scheme in ("s3", "s3a"):
        return _s3(storage_options or {}), f"{parsed.netloc}{parsed.path}"
    raise ConfigurationError(
        f"executors do not write data files to {scheme}:// lakes (only local paths and s3://); "
        "this is a bug: such a lake's rows should have gone to the driver"
    )


def _is_local(text: str) -> bool:
    return "://" not in text


def _s3(options: dict[str, str]) -> pafs.S3FileSystem:
    """pyarrow's S3 client configured as delta-rs would be from the same options (keys in any case)."""
    upper = {key.upper(): value for key, value in options.items()}
    endpoint = upper.get("AWS_ENDPOINT_URL") or upper.get("AWS_ENDPOINT")
    arguments: dict[str, Any] = {
        "access_key": upper.get("AWS_ACCESS_KEY_ID"),
        "secret_key": upper.get("AWS_SECRET_ACCESS_KEY"),
        "session_token": upper.get("AWS_SESSION_TOKEN"),
        "region": upper.get("AWS_REGION") or upper.get("AWS_DEFAULT_REGION"),
    }
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        arguments["endpoint_override"] = parsed.netloc
        arguments["scheme"] = parsed.scheme
    if upper.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").lower() in ("true", "1"):
        arguments["force_virtual_addressing"] = True
    return pafs.S3FileSystem(**{key: value for key, value in arguments.items() if value is not None})


def delta_statistics(data: pa.Table) -> str:
    """Delta's per-file statistics of ``data``: exact bounds where the type allows (module docstring)."""
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for field in data.schema:
        column = data.column(field.name)
        nulls[field.name] = column.null_count
        bounds = _bounds(column, field.type) if column.null_count < len(column) else None
        if bounds is not None:
            minimum[field.name], maximum[field.name] = bounds
    return json.dumps(
        {"numRecords": data.num_rows, "minValues": minimum, "maxValues": maximum, "nullCount": nulls},
        separators=(",", ":"),
    )


def _bounds(column: pa.ChunkedArray, arrow_type: pa.DataType) -> tuple[Any, Any] | None:
    if not (
        pa.types.is_integer(arrow_type) or pa.types.is_date32(arrow_type) or pa.types.is_string(arrow_type)
    ):
        return None
    extremes = pc.min_max(column)
    low, high = extremes["min"].as_py(), extremes["max"].as_py()
    if pa.types.is_date32(arrow_type):
        return low.isoformat(), high.isoformat()
    if pa.types.is_string(arrow_type) and max(len(low), len(high)) > _MAX_STRING_BOUND:
        return None
    return low, high
