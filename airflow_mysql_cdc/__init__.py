"""airflow-mysql-cdc: replicate MySQL tables into Delta Lake by snapshot plus GTID binlog CDC.

The package has two rooms. ``engine`` is the CDC engine and never imports
Airflow, because it runs inside Spark executors where Airflow is not installed. Everything else is
the thin Airflow layer that calls it, shaped like a first-party provider: ``hooks`` (connections and
the server queries the sensors and trigger share), ``triggers`` (which import hooks, never
sensors), ``sensors``, ``runs`` (what a run decides: the checkpoint chain, the segment plan, the
worker's one door into the lake), ``operators``, and ``pipeline`` (the example DAG and its
configuration). Each folder imports only from the ones before it (``tests/unit/test_package_layers.py``);
its ``__init__`` is its map. ``get_provider_info`` lists them for Airflow.
"""

__version__ = "0.1.0"
