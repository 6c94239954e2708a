"""The processes an application leaves on the host: its Python driver, and whether one is gone."""

from __future__ import annotations

import psutil


def command_line(process: psutil.Process) -> str:
    """The process's arguments joined by spaces; "" once it is gone."""
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return ""


def gone(process: psutil.Process) -> bool:
    """The process exited (a zombie not yet reaped counts as exited)."""
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def binlog_driver_under(pid: int) -> psutil.Process | None:
    """The binlog application's Python driver among the descendants of ``pid``, if it runs (not the
    spark-submit JVM, whose arguments name the application file too)."""
    for child in psutil.Process(pid).children(recursive=True):
        command = command_line(child).split(" ", 1)
        if "python" in command[0] and "binlog_to_delta" in command[-1]:
            return child
    return None
