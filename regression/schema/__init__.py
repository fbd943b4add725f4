"""The history's alembic environment (regression/migrations.py runs it; revisions under versions/)."""
