"""What every engine application's configuration shares: one lake, and no credential in the file.

Invariant: an application's configuration file holds nothing secret. Its public storage options
are checked when it is built (:func:`~.storage.check_storage_options`), a file naming a credential
is refused when it is read (:func:`~.storage.refuse_credentials`, the one refusal), and the lake's
secret options join the public ones only in the running application
(``secret_storage_options``, from the environment, never serialised). The snapshot, verification
and maintenance configurations are frozen dataclasses with this mixin; the binlog application's
:class:`~airflow_mysql_cdc.engine.apply.config.ApplyConfig` keeps its own typed ``from_dict`` and
asks the same refusal.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar, Self

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.storage import merged_storage_options, refuse_credentials
from airflow_mysql_cdc.engine.values.json_values import JsonObject


class LakeApplicationConfig:
    """Mixin of a frozen dataclass with ``lake_root``, ``tables``, ``storage_options`` and
    ``secret_storage_options`` fields: its JSON form, its file, the options delta-rs gets."""

    application: ClassVar[str] = "the application"
    """Named in errors: ``the verify application's configuration``."""
    config_error: ClassVar[type[Exception]] = ConfigurationError

    lake_root: str
    tables: tuple[str, ...]
    storage_options: dict[str, str]
    secret_storage_options: dict[str, str]

    @classmethod
    def where(cls) -> str:
        return f"{cls.application}'s configuration"

    def lake_storage_options(self) -> dict[str, str] | None:
        """What delta-rs gets to reach the lake: public and secret options (None: its defaults)."""
        return merged_storage_options(self.storage_options, self.secret_storage_options)

    def to_dict(self) -> JsonObject:
        """The public fields as JSON values (the secret options left out)."""
        assert dataclasses.is_dataclass(self)
        public = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        del public["secret_storage_options"]
        return json.loads(json.dumps(public, default=_json_value))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_file(cls, path: Path) -> Self:
        return cls.from_dict(json.loads(path.read_text()))

    @classmethod
    def from_dict(cls, data: JsonObject) -> Self:
        """A configuration read back: a credential or an unknown key is refused, naming it."""
        refuse_credentials(data, where=cls.where(), error=cls.config_error)
        assert dataclasses.is_dataclass(cls)
        known = {field.name for field in dataclasses.fields(cls)} - {"secret_storage_options"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise cls.config_error(
                f"{cls.where()} has unknown keys: {', '.join(unknown)} (known: {', '.join(sorted(known))}); "
                "the operator and the engine come from different versions of the package?"
            )
        values = dict(data)
        values["tables"] = tuple(values.get("tables") or ())
        return cls._typed(values)

    @classmethod
    def _typed(cls, values: JsonObject) -> Self:
        """The configuration of ``values`` (JSON values; a subclass turns its own into typed ones)."""
        return cls(**values)


def _json_value(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)
