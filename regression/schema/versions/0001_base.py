"""The first schema: runs, measurements, verdicts, skipped, outbox (a pre-alembic file's `user_version` 0, with the
`llvm_package` columns its farm added on open).

Revision ID: 0001_base
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_base"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("seq", sa.Integer, sa.Identity(), primary_key=True),
        sa.Column("run_id", sa.Text, nullable=False), sa.Column("builder", sa.Text, nullable=False),
        sa.Column("started", sa.Double, nullable=False), sa.Column("finished", sa.Double),
        sa.Column("status", sa.Text, nullable=False),  # running | complete | failed
        sa.Column("verdict", sa.Text),  # ok | regression (complete runs)
        sa.Column("llvm_version", sa.Text), sa.Column("llvm_commit", sa.Text), sa.Column("policy_id", sa.Text),
        sa.Column("vocab_version", sa.Text), sa.Column("report_url", sa.Text), sa.Column("error", sa.Text),
        sa.Column("config", sa.Text, nullable=False, server_default="{}"), sa.Column("llvm_package", sa.Text),
        sa.UniqueConstraint("run_id", "builder"),
        sqlite_autoincrement=True)
    op.create_table(
        "measurements",
        *(sa.Column(c, sa.Text, nullable=False) for c in ("run_id", "builder", "subject", "kind", "metric", "policy")),
        sa.Column("value", sa.Double, nullable=False),
        sa.Column("samples", sa.Text, nullable=False, server_default="[]"),
        sa.Column("unit", sa.Text, nullable=False, server_default=""),
        *(sa.Column(c, sa.Text) for c in ("llvm_commit", "policy_id", "vocab_version", "llvm_package")),
        sa.PrimaryKeyConstraint("run_id", "builder", "subject", "metric", "policy"))
    op.create_table(
        "verdicts",
        *(sa.Column(c, sa.Text, nullable=False) for c in ("run_id", "builder", "subject", "kind", "metric",
                                                          "baseline")),
        sa.Column("base_value", sa.Double), sa.Column("value", sa.Double, nullable=False),
        sa.Column("delta_pct", sa.Double), sa.Column("p_value", sa.Double),
        sa.Column("verdict", sa.Text, nullable=False), sa.Column("gating", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "builder", "subject", "metric", "baseline"))
    op.create_table(
        "skipped",
        *(sa.Column(c, sa.Text, nullable=False) for c in ("run_id", "builder", "subject", "variant", "reason")))
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer, sa.Identity(), primary_key=True),
        *(sa.Column(c, sa.Text, nullable=False) for c in ("run_id", "builder", "kind", "sender", "recipients")),
        sa.Column("message", sa.LargeBinary, nullable=False), sa.Column("created", sa.Double, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"), sa.Column("last_error", sa.Text),
        sa.Column("sent", sa.Double),
        sqlite_autoincrement=True)


def downgrade() -> None:
    for table in ("outbox", "skipped", "verdicts", "measurements", "runs"):
        op.drop_table(table)
