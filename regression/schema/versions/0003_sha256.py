"""`measurements.sha256`: the digest of the object file or binary a row measured (regression/compare.py): rows of
byte-identical builds are "no change" without judging their numbers (LNT's binary hash check). A pre-alembic
file's `user_version` 2.

Revision ID: 0003_sha256
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_sha256"
down_revision = "0002_alerts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("measurements", sa.Column("sha256", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("sha256")
