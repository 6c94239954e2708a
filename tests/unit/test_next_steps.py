"""Words at the edge: the engine names what to do by meaning, the Airflow side says how in Airflow."""

from __future__ import annotations

import ast
import logging
import re
import sys
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

import airflow_mysql_cdc.engine as engine
from airflow_mysql_cdc.engine.apply.admission import TableAdmissionError
from airflow_mysql_cdc.engine.errors import NEXT_STEP_PREFIX, ExitCode, NextStep, Step
from airflow_mysql_cdc.hooks.engine_process import EngineProcess
from airflow_mysql_cdc.hooks.next_steps import in_airflow, with_next_step


def test_a_next_step_survives_the_line_an_entry_point_prints() -> None:
    step = NextStep.resnapshot("shop.orders", "shop.payments")
    assert NextStep.in_line(f"2026-11-28 12:00:00 stderr {step.line()}") == step
    assert NextStep.in_line(NextStep.run_again().line()) == NextStep.run_again()


@pytest.mark.parametrize(
    "line",
    ["an ordinary log line", f"{NEXT_STEP_PREFIX} {{not json", f'{NEXT_STEP_PREFIX} {{"step": "dance"}}',
     f"{NEXT_STEP_PREFIX} []"],
)  # fmt: skip
def test_a_line_naming_no_step_or_a_garbled_one_names_none(line: str) -> None:
    assert NextStep.in_line(line) is None


def test_an_error_carries_the_step_it_names() -> None:
    error = TableAdmissionError("shop.orders cannot join").then(NextStep.resnapshot("shop.orders"))
    assert error.next_step == NextStep(Step.RESNAPSHOT, ("shop.orders",))
    assert TableAdmissionError("no step").next_step is None


def test_airflow_words_say_which_conf_or_operator_takes_a_resnapshot() -> None:
    words = in_airflow(NextStep.resnapshot("shop.orders"))
    assert 'trigger the pipeline DAG with the conf {"resnapshot": ["shop.orders"]}' in words
    assert "MySqlCdcSnapshotOperator with tables=['shop.orders'] and restart=True" in words
    every = in_airflow(NextStep.resnapshot())
    assert '{"resnapshot": [...]} listing every table of the pipeline' in every


def test_airflow_words_for_running_again_are_clearing_the_task() -> None:
    assert with_next_step("Fixed?", NextStep.run_again()) == (
        "Fixed? In Airflow: clear this task once the cause is fixed; the next attempt continues from "
        "the lake."
    )
    assert with_next_step("Nothing to do.", None) == "Nothing to do."


AIRFLOW_HOW = re.compile(
    r"\bDAG\b|XCom|clear (this|the) task|cleared task|MySqlCdc\w+|restart=True|trigger (the|a)\b|"
    r"with the conf|Airflow connection"
)


def _message_strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that are not docstrings (messages, log lines, names)."""
    tree = ast.parse(path.read_text())
    documentation = set()
    for node in ast.walk(tree):
        for child in getattr(node, "body", ()) if isinstance(getattr(node, "body", None), list) else ():
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant):
                documentation.add(id(child.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documentation
    ]


def test_no_engine_message_says_how_to_act_in_airflow() -> None:
    """The engine's errors and reports name tables, positions and actions by meaning; how to take an
    action in Airflow (a DAG's conf, an operator, clearing a task) is the Airflow side's to say."""
    root = Path(engine.__file__).parent
    found = [
        f"{path.relative_to(root)}:{line}: {text[:100]!r}"
        for path in sorted(root.rglob("*.py"))
        for line, text in _message_strings(path)
        if AIRFLOW_HOW.search(text)
    ]
    assert found == []


def test_an_engine_process_failure_ends_with_how_to_take_its_next_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application = tmp_path / "stopping_application.py"
    application.write_text(
        "import sys\n"
        "print('airflow-mysql-cdc ERROR lake/start mismatch: TableAdmissionError: shop.orders cannot join', "
        "file=sys.stderr)\n"
        f"print({NextStep.resnapshot('shop.orders').line()!r}, file=sys.stderr)\n"
        f"sys.exit({int(ExitCode.LAKE_MISMATCH)})\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    process = EngineProcess(logging.getLogger("engine_process_test"), "verify_lake")
    with pytest.raises(AirflowFailException) as failure:
        process.run("stopping_application", {"pipeline_id": f"next-steps-{tmp_path.name}"}, {})
    assert str(failure.value) == (
        f"verify_lake failed: {ExitCode.LAKE_MISMATCH.meaning} (exit code 4)."
        + in_airflow(NextStep.resnapshot("shop.orders"))
    )
