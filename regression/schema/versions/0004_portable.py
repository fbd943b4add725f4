"""What SQLite alone could answer, as columns PostgreSQL has too.

`runs.bisect_alert`: the alert a bisect's re-run answers (its `config.bisect.alert`, regression/bisectrun.py;
0 when the config names a bisect but no alert), so that "not a bisect's re-run" is `bisect_alert IS NULL` instead
of SQLite's `json_extract(config, '$.bisect')`; filled here from the rows' config. `alert_states.id`: the order
of an alert's changes of state beyond their time (two at the same second), which was SQLite's `rowid`.

SQLite cannot add a primary key to a table: alert_states is copied into a new one in rowid order (what alembic's
batch mode does, but batch mode's copy names no order, and the order is the point).

Revision ID: 0004_portable
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0004_portable"
down_revision = "0003_sha256"
branch_labels = None
depends_on = None


def bisect_alert(config: str | None) -> int | None:
    """The alert a stored config says its run bisects (`config.bisect.alert`; 0 when the config names a bisect but
    no alert), None for a builder's own run and for a config that is no JSON object: hostile numbers or nesting
    are no bisect, not a failed upgrade.

    A frozen copy of what the farm read when this revision was written (regression/history.py `bisect_alert`, the
    JSON read through farm/jsonio.py), kept here on purpose: a revision imports no code of the farm, so that it
    upgrades the same way whatever the farm's modules become (tests/regression/test_history_db.py)."""
    try:
        value = json.loads(config or "{}")
    except (ValueError, RecursionError):  # not JSON, not UTF-8, an integer of too many digits; nested too deeply
        return None
    if not isinstance(value, dict):
        return None
    bisect = value.get("bisect")
    if bisect is None:
        return None
    alert = bisect.get("alert") if isinstance(bisect, dict) else None
    return alert if isinstance(alert, int) and not isinstance(alert, bool) else 0


def upgrade() -> None:
    op.add_column("runs", sa.Column("bisect_alert", sa.Integer))
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT seq, config FROM runs WHERE config LIKE :bisect"),
                        {"bisect": '%"bisect"%'}).fetchall()
    for seq, config in rows:
        alert = bisect_alert(config)
        if alert is not None:
            bind.execute(sa.text("UPDATE runs SET bisect_alert=:a WHERE seq=:seq"), {"a": alert, "seq": seq})
    if bind.dialect.name == "sqlite":
        op.execute("""CREATE TABLE alert_states_ordered (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            alert_id INTEGER NOT NULL REFERENCES alerts (id),
            at FLOAT NOT NULL, state TEXT NOT NULL, who TEXT NOT NULL, note TEXT NOT NULL DEFAULT '')""")
        op.execute("INSERT INTO alert_states_ordered (alert_id, at, state, who, note)"
                   " SELECT alert_id, at, state, who, note FROM alert_states ORDER BY rowid")
        op.drop_index("alert_states_alert", "alert_states")
        op.drop_table("alert_states")
        op.rename_table("alert_states_ordered", "alert_states")
        op.create_index("alert_states_alert", "alert_states", ["alert_id", "at"])
    else:
        op.add_column("alert_states", sa.Column("id", sa.Integer, sa.Identity(), nullable=False))
        op.create_primary_key("alert_states_pkey", "alert_states", ["id"])


def downgrade() -> None:
    with op.batch_alter_table("alert_states") as batch:
        batch.drop_column("id")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("bisect_alert")
