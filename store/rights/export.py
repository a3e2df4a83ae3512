"""Everything the store holds for a tenant, as records: one JSON document or streaming JSONL.

A record is a flat dict with ``type`` and ``user_id``. Each section's sha256 is taken over
its records' canonical JSON lines, so the JSON and JSONL forms of an export share digests.
The JSONL form ends with the manifest, since counts and digests are known only at the end.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import IO, Any

from sqlalchemy import Connection, func, select

from .. import schema
from ..backend import Backend
from ..tenancy import Tenant, in_groups
from ..tiers.records import Reading, iso
from ..tiers.registry import EXPORTED, SECTIONS
from ..validation import utcnow

FORMAT = "memlens-export"
FORMAT_VERSION = 1


def canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def tenant_records(
    conn: Connection, tenant: Tenant, *, embeddings: bool, now: datetime | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(section, record) pairs for everything one tenant owns, tier by tier in the registry's
    order (each tier's module builds its records), then its audit entries. Key-value entries
    expired at ``now`` (default: the clock's now) are left out."""
    reading = Reading(conn, tenant, embeddings, utcnow() if now is None else now)
    for tier in EXPORTED:
        for record in tier.records(reading):
            yield tier.section, record


class Digests:
    """Counts and sha256 per section, fed one record at a time."""

    def __init__(self) -> None:
        self.counts = {s: 0 for s in SECTIONS}
        self._hashes = {s: hashlib.sha256() for s in SECTIONS}

    def add(self, section: str, line: str) -> None:
        self.counts[section] += 1
        self._hashes[section].update(line.encode("utf-8") + b"\n")

    def manifest(
        self,
        store_path: str,
        tenants: list[str | None],
        at: datetime,
        model: str | None,
        embeddings: bool,
        *,
        schema_version: int | None = None,
    ) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "exported_at": iso(at),
            "source_store": store_path,
            "schema_version": schema_version,
            "tenants": tenants,
            "embedding_model": model if embeddings else None,
            "includes_embeddings": embeddings,
            "counts": dict(self.counts),
            "sha256": {s: h.hexdigest() for s, h in self._hashes.items()},
        }


def count_records(conn: Connection, tenant: Tenant) -> int:
    """A cheap total for progress bars."""
    return sum(int(conn.execute(tenant.select(t, func.count())).scalar_one()) for t in (tier.table for tier in EXPORTED))


def write(
    backend: Backend,
    tenants: list[Tenant],
    sink: IO[str],
    *,
    fmt: str,
    embeddings: bool,
    at: datetime,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], dict[Tenant, dict[str, int]]]:
    """Write an export of ``tenants`` to the text stream ``sink``; returns the manifest and each
    tenant's own counts (what its audit entry records: the manifest's are the whole file's)."""
    digests = Digests()
    counts_of: dict[Tenant, dict[str, int]] = {}
    # One snapshot, read a group of tenants per transaction: a PostgreSQL store locks each
    # tenant's partitions it reads until its transaction ends (Backend.tenants_per_read).
    groups = in_groups(tenants, backend.tenants_per_read)
    with backend.snapshot_reads() as read:
        total = 0
        for group in groups:
            with read() as conn:
                total += sum(count_records(conn, t) for t in group)
        done = 0
        if fmt == "json":
            sink.write('{"records":[\n')
        first = True
        for group in groups:
            with read() as conn:
                for tenant in group:
                    before = dict(digests.counts)
                    for section, record in tenant_records(conn, tenant, embeddings=embeddings):
                        line = canonical(record)
                        digests.add(section, line)
                        if fmt == "json":
                            sink.write(("" if first else ",\n") + line)
                        else:
                            sink.write(line + "\n")
                        first = False
                        done += 1
                        if progress and done % 500 == 0:
                            progress(done, total)
                    counts_of[tenant] = {section: digests.counts[section] - before[section] for section in SECTIONS}
        with read() as conn:
            model = schema_model(conn)
    manifest = digests.manifest(
        str(backend.path), [t.user_id for t in tenants], at, model, embeddings, schema_version=backend.schema_version
    )
    if fmt == "json":
        sink.write('\n],"manifest":' + canonical(manifest) + "}\n")
    else:
        sink.write(canonical({"type": "manifest", **manifest}) + "\n")
    if progress:
        progress(total, total)
    return manifest, counts_of


def schema_model(conn: Connection) -> str | None:
    row = conn.execute(select(schema.meta_t.c.value).where(schema.meta_t.c.key == "embedding_model")).first()
    return row[0] if row else None
