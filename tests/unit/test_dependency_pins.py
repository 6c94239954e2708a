"""The pandas pin is the range the pinned PySpark supports (docs/deployment.md, "pandas on the
Airflow worker"): below it PySpark refuses to run pandas code, above it every SparkContext start
warns in the task log. When PySpark moves its range, this test names the pin to move."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pyspark
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _pyspark_pandas_range() -> tuple[Version, Version]:
    """PySpark's minimum pandas (an error below it) and the version from which it warns."""
    source = (Path(pyspark.__file__).parent / "sql" / "pandas" / "utils.py").read_text()
    function = source.split("def require_minimum_pandas_version", 1)[1].split("\ndef ", 1)[0]
    minimum = re.search(r'minimum_pandas_version = "([^"]+)"', function)
    warned_from = re.search(r'LooseVersion\(pandas.__version__\) >= LooseVersion\("([^"]+)"\)', function)
    assert minimum and warned_from, "PySpark's pandas version check changed shape: read it again"
    return Version(minimum.group(1)), Version(warned_from.group(1))


def test_the_pandas_pin_is_the_range_the_pinned_pyspark_supports() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (pandas,) = [Requirement(d) for d in dependencies if Requirement(d).name == "pandas"]
    minimum, warned_from = _pyspark_pandas_range()
    supported = SpecifierSet(f">={minimum.major}.{minimum.minor},<{warned_from.major}")
    assert pandas.specifier == supported, (
        f"pyproject pins {pandas}; PySpark {pyspark.__version__} needs pandas >= {minimum} and warns "
        f"from {warned_from}: pin pandas{supported}"
    )
