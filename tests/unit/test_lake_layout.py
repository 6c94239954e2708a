"""Lake locations are URIs: every layout path keeps its scheme and ``//`` (pathlib collapsed them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.lake.layout import LakeLayout, lake_uri

ROOTS = {
    "s3://lake/shop": "s3://lake/shop",
    "s3://lake/shop/": "s3://lake/shop",
    "gs://lake-bucket/prod/shop": "gs://lake-bucket/prod/shop",
    "abfss://lake@account.dfs.core.windows.net/shop": "abfss://lake@account.dfs.core.windows.net/shop",
    "file:///var/lake/shop/": "file:///var/lake/shop",
    "/var/lake/shop/": "/var/lake/shop",
    "relative/lake": "relative/lake",
}


def _every_path(layout: LakeLayout) -> list[str]:
    return [
        layout.target("shop", "orders"),
        layout.changelog("shop", "orders"),
        layout.state,
        layout.join_state("shop", "orders", "0123abcd"),
    ]


@pytest.mark.parametrize(("root", "normalised"), ROOTS.items())
def test_every_layout_path_keeps_the_roots_scheme_and_slashes(root: str, normalised: str) -> None:
    layout = LakeLayout(root)
    assert layout.root == normalised
    assert _every_path(layout) == [
        f"{normalised}/shop/orders",
        f"{normalised}/_changelog/shop/orders",
        f"{normalised}/_cdc/state",
        f"{normalised}/_cdc/joins/shop/orders/0123abcd",
    ]
    for path in _every_path(layout):
        assert "//" not in path.partition("://")[2].lstrip("/")  # no empty segment after the authority


def test_a_local_path_object_still_works_and_gives_strings(tmp_path: Path) -> None:
    layout = LakeLayout(tmp_path / "lake")
    assert layout.state == f"{tmp_path}/lake/_cdc/state"
    assert all(isinstance(path, str) for path in _every_path(layout))


def test_a_filesystem_root_is_kept() -> None:
    assert LakeLayout("/").state == "/_cdc/state"
    assert LakeLayout("file:///").state == "file:///_cdc/state"


@pytest.mark.parametrize("root", ["", "  ", "s3://", "gs://"])
def test_a_root_naming_no_location_is_refused(root: str) -> None:
    with pytest.raises(ValueError, match="names no location"):
        lake_uri(root)


@pytest.mark.parametrize("name", ["orders/../x", "a b", "", "x/y"])
def test_a_name_that_is_not_a_safe_path_segment_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="cannot be used as a lake path segment"):
        LakeLayout("s3://lake/shop").target("shop", name)
