"""The privileges of the connected account, read from ``SHOW GRANTS``.

Only global privileges are parsed here (REPLICATION SLAVE and REPLICATION CLIENT exist only at the
global level). Table-level SELECT is not judged from grant text at all: roles, partial revokes and
wildcard schema grants make that error-prone, so the prerequisites check probes each table with a
``SELECT ... LIMIT 0`` instead, which asks MySQL itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pymysql

_GRANT_PATTERN = re.compile(r"^GRANT (?P<privileges>.+?) ON (?P<object>\S+) TO ", re.IGNORECASE)
_PARENTHESISED = re.compile(r"\([^)]*\)")


@dataclass(frozen=True)
class AccountGrants:
    account: str
    """``CURRENT_USER()``, e.g. ``cdc@%``: the account MySQL matched, the one grants go to."""
    grant_statements: tuple[str, ...]

    @property
    def global_privileges(self) -> frozenset[str]:
        privileges: set[str] = set()
        for statement in self.grant_statements:
            match = _GRANT_PATTERN.match(statement)
            if not match or match.group("object") != "*.*":
                continue
            for privilege in _PARENTHESISED.sub("", match.group("privileges")).split(","):
                privileges.add(" ".join(privilege.split()).upper())
        return frozenset(privileges)

    def has_global(self, privilege: str) -> bool:
        held = self.global_privileges
        return "ALL PRIVILEGES" in held or "ALL" in held or privilege.upper() in held

    @property
    def quoted_account(self) -> str:
        user, _, host = self.account.rpartition("@")
        return f"'{user}'@'{host}'"


def read_account_grants(cursor: pymysql.cursors.Cursor) -> AccountGrants:
    cursor.execute("SELECT CURRENT_USER(), CURRENT_ROLE()")
    account, roles = cursor.fetchone()
    cursor.execute("SHOW GRANTS")
    statements = [row[0] for row in cursor.fetchall()]
    if roles and roles != "NONE":
        # Privileges that come from active roles only show with USING.
        cursor.execute(f"SHOW GRANTS FOR CURRENT_USER() USING {roles}")
        statements += [row[0] for row in cursor.fetchall()]
    return AccountGrants(account=account, grant_statements=tuple(statements))
