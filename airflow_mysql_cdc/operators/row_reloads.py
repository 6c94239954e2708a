"""Re-load key ranges at the lake's position: a run conf's ``resnapshot`` of ``key_from``..``key_to``.

Invariant: a re-loaded range is exact at the run's end set, as a snapshot of it would be. Before the
run applies its segment, a verification of just that range with repair
(:mod:`airflow_mysql_cdc.engine.verify`) runs under the pipeline's lease: every key of the range that
no transaction after the position changed is set to its value at the position (a differing row
rewritten, a missing one added, one the source lacks deleted); a key changed since then is left to
the stream, whose row images set it whole (docs/operations.md, "Re-load a key range"). Carried out
by the replicate task (:mod:`.replicate`); guarded by ``tests/integration/test_run_actions.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.verify.config import VerifyConfig
from airflow_mysql_cdc.engine.verify.report import VerifyReport
from airflow_mysql_cdc.engine.verify.settings import VerifySettings
from airflow_mysql_cdc.hooks.engine_process import EngineProcess
from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets
from airflow_mysql_cdc.operators.verify import APPLICATION_MODULE as VERIFY_APPLICATION
from airflow_mysql_cdc.runs.actions import ResnapshotRequest, RunActionError


@dataclass(frozen=True)
class ReloadTarget:
    """The pipeline whose lake the ranges are re-loaded into, and from which source."""

    pipeline_id: str
    lake_root: str
    storage_options: dict[str, str]
    lake_conn_id: str | None
    mysql_cdc_conn_id: str
    chunk_size: int
    soft_deletes: bool


def reload_rows(
    requests: Sequence[ResnapshotRequest],
    target: ReloadTarget,
    engine: Callable[[], EngineProcess],
    log: Any,
) -> list[JsonObject]:
    """Re-load each range ``requests`` name (module doc), each in a verify process ``engine`` starts
    (the task's ``on_kill`` stops it); per range its ``status``, ``clean`` or ``repaired`` (the XCom
    ``reloads``). A range the verification cannot judge fails the run, asking for a whole re-snapshot."""
    endpoint = MySqlCdcHook(target.mysql_cdc_conn_id).get_endpoint()
    public, secret = LakeStorageHook(target.lake_conn_id).get_storage_options(target.storage_options)
    secrets = ApplicationSecrets.of(endpoint, secret)
    reloads = []
    for request in requests:
        if request.where is not None:
            raise RunActionError(
                f"resnapshot of {request.table} where {request.where!r}: re-loading rows by a predicate "
                "is not available (rows the source deleted cannot be found in the lake by a MySQL "
                'predicate). Give the key range instead ("key_from"/"key_to"), or re-snapshot '
                "the whole table. Nothing was done."
            )
        settings = VerifySettings(
            mode="full", chunk_size=target.chunk_size, repair=True,
            key_from=request.key_from, key_to=request.key_to,
        )  # fmt: skip
        log.info(
            "Re-loading %s keys %s to %s (inclusive) at the lake's position",
            request.table, list(request.key_from or ["(first)"]), list(request.key_to or ["(last)"]),
        )  # fmt: skip
        config = VerifyConfig(
            pipeline_id=target.pipeline_id, lake_root=target.lake_root, tables=(request.table,),
            settings=settings, soft_deletes=target.soft_deletes, storage_options=public, lease_s=60.0,
        )  # fmt: skip
        result = engine().run(VERIFY_APPLICATION, config.to_dict(), secrets.environment)
        (report,) = VerifyReport.from_dict(result).tables
        if report.status not in ("clean", "repaired"):
            raise RunActionError(
                f"the re-load of {request.table} ended {report.status}: "
                f"{report.reason or report.describe()}. "
                f'Re-snapshot the whole table instead ({{"resnapshot": ["{request.table}"]}}).'
            )
        reloads.append({**request.to_json(), "status": report.status, "repair": report.repair})
        log.info("%s: the key range is %s", request.table, report.status)
    return reloads
