"""lake/maintenance/: keep a pipeline's lake bounded in files, for years, without racing its runs.

Reading order:

- ``policy``  the pipeline JSON's ``maintenance`` object (cadence, thresholds, sizes), validated.
- ``steps``   what is done to one table (sort or compact, checkpoint, clean expired logs, vacuum);
              no step changes a row.
- ``run``     one run under the pipeline's lease, table by table, reported and logged.
- ``config``  the maintenance application's configuration (the typed policy, no credential).
- ``report``  what a run did, per table: the application's typed result, read back by the operator.

Invariant of the folder: maintenance only rearranges files and removes what no current version
and no running reader needs; every fact a later run reads is kept where it does not touch
(:mod:`..state`). Guarding tests: tests/integration/test_lake_maintenance.py (file counts bounded,
a kill -9 mid-maintenance and its retry), test_lake_state_durability.py.
"""
