"""`outbox.claimed`: when a deliverer took a queued mail to send it. Two deliverers at once (two builders finishing
together, or the Celery beat's delivery of held and failed mails meeting a run's: regression/tasks.py) each read
the pending mails; without a claim both would send the same one. A deliverer claims a mail in one conditional
UPDATE before sending it (History.claim) and clears the claim when it is sent or given up; a claim older than the
lease is taken over (its deliverer died).

Revision ID: 0005_outbox_claim
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_outbox_claim"
down_revision = "0004_portable"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("outbox", sa.Column("claimed", sa.Float))


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("claimed")
