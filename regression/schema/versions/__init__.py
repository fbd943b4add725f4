"""The history's schema revisions, oldest first by their down_revision (regression/migrations.py)."""
