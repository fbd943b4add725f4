"""Alerts as records with a life (regression/alertstore.py; a pre-alembic file's `user_version` 1).

`alerts`: one per transition into regression (or an improvement); `alert_states`: every change of an alert's
state with who, when and a note; the outbox's `alert_id` and `hold_until` (a regression mail held `[alerts]
group_wait` minutes, so that the alerts of other builders with the same change join it in one summary). An alert
has room for what later work attaches: `group_id` (alerts of several builders sharing a change of inputs) and
`bisect` (JSON: the culprit input and its evidence runs, regression/bisectrun.py).

Revision ID: 0002_alerts
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_alerts"
down_revision = "0001_base"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alerts",
        sa.Column("id", sa.Integer, sa.Identity(), primary_key=True),
        sa.Column("kind", sa.Text, nullable=False),  # regression | improvement
        sa.Column("builder", sa.Text, nullable=False),
        sa.Column("bad_run", sa.Text, nullable=False),  # the first bad run (for an improvement: the better run)
        sa.Column("good_run", sa.Text),  # the last good run before it (none: the builder's first run)
        sa.Column("created", sa.Double, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("changed", sa.Double, nullable=False),  # when the state last changed
        sa.Column("closed_by", sa.Text),  # the run that found the builder recovered (detected-fixed)
        sa.Column("inputs", sa.Text, nullable=False, server_default="{}"),  # JSON: the inputs that changed
        sa.Column("group_id", sa.Integer),  # alerts of several builders with overlapping changed inputs
        sa.Column("bisect", sa.Text),  # JSON: a bisect's result (the culprit input, its evidence runs)
        sa.UniqueConstraint("builder", "bad_run", "kind"),
        sqlite_autoincrement=True)
    op.create_index("alerts_state", "alerts", ["state", "builder"])
    op.create_table(
        "alert_states",
        sa.Column("alert_id", sa.Integer, sa.ForeignKey("alerts.id"), nullable=False),
        sa.Column("at", sa.Double, nullable=False), sa.Column("state", sa.Text, nullable=False),
        sa.Column("who", sa.Text, nullable=False), sa.Column("note", sa.Text, nullable=False, server_default=""))
    op.create_index("alert_states_alert", "alert_states", ["alert_id", "at"])
    op.add_column("outbox", sa.Column("alert_id", sa.Integer))
    op.add_column("outbox", sa.Column("hold_until", sa.Double))


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("hold_until")
        batch.drop_column("alert_id")
    op.drop_table("alert_states")
    op.drop_table("alerts")
