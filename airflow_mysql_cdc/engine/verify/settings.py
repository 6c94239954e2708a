"""How a pipeline verifies its lake: the pipeline JSON's ``verify*`` keys, typed and checked once.

Invariant: settings are validated where they are read (the pipeline's configuration file, the
verify application's configuration), so a wrong value fails the DAG's import or the task at once,
naming the key, never halfway through a verification.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.values.json_values import JsonObject

VerifyMode = Literal["off", "sample", "full"]
MODES: tuple[VerifyMode, ...] = get_args(VerifyMode)


class VerifySettingsError(ConfigurationError, ValueError):
    """A verify setting has a wrong key or value."""


def verify_mode(value: str) -> VerifyMode:
    """``value`` as a verify mode, or the refusal naming the modes (the pipeline JSON's ``verify``)."""
    for mode in MODES:
        if value == mode:
            return mode
    raise VerifySettingsError(f"verify must be one of {', '.join(MODES)}, not {value!r}")


@dataclass(frozen=True)
class VerifySettings:
    """What one verification checks and does (docs/operations.md, "Verifying the lake")."""

    mode: VerifyMode = "off"
    """``off``; ``sample``: ``sample_chunks`` chunks per table and run, the next run going on where
    this one stopped; ``full``: every chunk of every table."""
    sample_chunks: int = 4
    chunk_size: int = 50_000
    """Rows per chunk (the pipeline's snapshot ``chunk_size``)."""
    max_examples: int = 10
    """Differing keys named per table in the result and the failure message."""
    mask_values: bool = False
    """Examples name keys by a hash and columns by name, never their values."""
    repair: bool = False
    """Upsert or delete exactly the differing keys in the target, then verify them again."""
    settle_s: float = 1.0
    """How long after a chunk's read the closing watermark is read (module ``run``, point 2)."""
    key_from: tuple[Any, ...] | None = None
    """Only keys from this one on (inclusive; one value per key column): a re-load of a key range
    (a run's ``{"resnapshot": [{"table": ..., "key_from": [...], "key_to": [...]}]}``); ``full`` only."""
    key_to: tuple[Any, ...] | None = None
    """Only keys up to this one (inclusive)."""

    @property
    def key_range(self) -> bool:
        return self.key_from is not None or self.key_to is not None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise VerifySettingsError(f"verify must be one of {', '.join(MODES)}, not {self.mode!r}")
        for name, least in (("sample_chunks", 1), ("chunk_size", 1), ("max_examples", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise VerifySettingsError(
                    f"verify_{name} must be an integer of at least {least}, not {value!r}"
                )
        for name in ("mask_values", "repair"):
            if not isinstance(getattr(self, name), bool):
                raise VerifySettingsError(f"verify_{name} must be true or false, not {getattr(self, name)!r}")
        if self.key_range and self.mode != "full":
            raise VerifySettingsError("a key range (key_from/key_to) is verified in full mode only")
        for name in ("key_from", "key_to"):
            bound = getattr(self, name)
            if bound is not None and (not isinstance(bound, tuple) or not bound):
                raise VerifySettingsError(f"{name} must hold one value per key column, not {bound!r}")
        if not 0 <= self.settle_s <= 60:
            raise VerifySettingsError(f"settle_s must be between 0 and 60 seconds, not {self.settle_s!r}")

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> VerifySettings:
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise VerifySettingsError(
                f"unknown verify settings: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        values = dict(data)
        for name in ("key_from", "key_to"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        return cls(**values)
