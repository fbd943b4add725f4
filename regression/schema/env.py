"""Alembic's environment of the history: regression/migrations.py runs it on the connection of its transaction
(`config.attributes["connection"]`), so an upgrade is one transaction under the upgrade lock; a developer's
`alembic` command (e.g. `alembic -x url=sqlite:///h.sqlite revision -m ...`, with script_location set to this
directory) gets an engine of its own from `-x url=` or `sqlalchemy.url`."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

config = context.config
connection = config.attributes.get("connection")
if connection is not None:
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():  # the caller's transaction: alembic begins and commits nothing
        context.run_migrations()
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    with sa.create_engine(url).connect() as conn:
        context.configure(connection=conn, target_metadata=None)
        with context.begin_transaction():
            context.run_migrations()
