"""Connections to a PostgreSQL store, set up so that one tenant's maintenance never stalls
another tenant's queries."""

from __future__ import annotations

from typing import Any

import pgvector.sqlalchemy  # noqa: F401 - registers the vector type with SQLAlchemy's reflection
from sqlalchemy import Engine, create_engine

# A generic plan (a prepared statement's plan made without its parameter values) cannot prune
# partitions when it is planned, so it locks every tenant's partition when it runs and waits
# behind any of them being rewritten. Measured here while one tenant's 25k-episode partition
# went through VACUUM (FULL): another tenant's prepared query waited at most 756 ms with
# forced generic plans, 35 ms with the default (auto), 8 ms with custom plans forced.
SESSION_OPTIONS = "-c plan_cache_mode=force_custom_plan"


def create(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url`` (``postgresql+psycopg://...``; a bare ``postgresql://`` gets the
    psycopg driver) whose connections always plan with the tenant's key in hand."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args["options"] = " ".join(filter(None, [connect_args.get("options"), SESSION_OPTIONS]))
    return create_engine(url, connect_args=connect_args, **kwargs)
