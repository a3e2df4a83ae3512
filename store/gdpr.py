"""Export, import, forget and the audit log, as methods of :class:`~store.memory.MemoryStore`."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable

from . import audit, export, export_file, forget, import_writer, importer
from .errors import InvalidInputError, UnknownSessionError
from .models import AuditEntry, ForgetReceipt, ImportReport
from .schema import audit_t, episodes_t, sessions_t, tenants_t
from .tenancy import UNSET, Tenant, all_tenants, require_tenant
from .validation import check_flag, check_int, check_name, check_optional_datetime, utcnow


class GdprMixin:
    """Mixed into MemoryStore; relies on its ``_db``, ``_tenant`` and ``_indexer``."""

    def require_tenant(self, *, user_id: Any = UNSET, missing_ok: bool = False) -> bool:
        """Whether the store holds this tenant. Unless ``missing_ok``, a tenant it does not hold
        raises UnknownTenantError naming close matches (``Alice`` for ``alice``)."""
        tenant = self._tenant(user_id)
        with self._db.read() as conn:
            return require_tenant(conn, tenant, missing_ok=missing_ok)

    # --- export ------------------------------------------------------------------------------

    def export(self, *, user_id: Any = UNSET, include_embeddings: bool = False, actor: str = "api",
               missing_ok: bool = False) -> dict[str, Any]:
        """Everything the store holds for one tenant, grouped by section, with a manifest
        (format version, counts and sha256 per section, when, from which store). A tenant the
        store does not hold raises UnknownTenantError unless ``missing_ok``."""
        buffer = io.StringIO()
        manifest = self.export_to(buffer, user_ids=[user_id], fmt="jsonl",
                                  include_embeddings=include_embeddings, actor=actor, missing_ok=missing_ok)
        grouped: dict[str, Any] = {"manifest": manifest, **{s: [] for s in export.SECTIONS}}
        for line in buffer.getvalue().splitlines():
            record = json.loads(line)
            if record["type"] != "manifest":
                grouped[importer.SECTION_OF[record["type"]]].append(record)
        return grouped

    def export_to(
        self,
        target: str | Path | IO[str],
        *,
        user_ids: list[str | None] | None = None,
        fmt: str = "jsonl",
        include_embeddings: bool = False,
        actor: str = "api",
        progress: Callable[[int, int], None] | None = None,
        overwrite: bool = False,
        missing_ok: bool = False,
    ) -> dict[str, Any]:
        """Stream an export of ``user_ids`` (None: every tenant) to a path or text stream.

        ``fmt`` is ``"jsonl"`` (a record a line, the manifest last) or ``"json"`` (one
        document). A tenant the store does not hold raises UnknownTenantError (naming close
        matches) unless ``missing_ok``. A path is never the store itself or one of its side
        files, and never an existing file unless ``overwrite``: the export goes to an owner-only
        (0600) partial file that is renamed into place, so a failed or killed export leaves no
        half file (see :mod:`store.export_file`). Each exported tenant gets an audit entry.
        Returns the manifest.
        """
        if fmt not in ("json", "jsonl"):
            raise InvalidInputError("fmt must be 'json' or 'jsonl'")
        if not isinstance(overwrite, bool) or not isinstance(missing_ok, bool):
            raise InvalidInputError("overwrite and missing_ok must be True or False")
        actor = check_name(actor, "actor")
        with self._db.read() as conn:
            if user_ids is None:
                tenants = all_tenants(conn, tenants_t)
            else:
                tenants = [Tenant.of(u) for u in user_ids]
                for tenant in tenants:
                    require_tenant(conn, tenant, missing_ok=missing_ok)
        at = utcnow()
        if isinstance(target, (str, Path)):
            path = export_file.check_target(target, self._db.path, overwrite=overwrite)
            export_file.remove_leftover_exports(self._db)
            with export_file.writing(self._db, path, overwrite=overwrite) as sink:
                manifest = export.write(self, tenants, sink, fmt=fmt, embeddings=include_embeddings, at=at, progress=progress)
        else:
            manifest = export.write(self, tenants, target, fmt=fmt, embeddings=include_embeddings, at=at, progress=progress)
        if not self.read_only:
            with self._db.write() as conn:
                for tenant in tenants:
                    audit.record(conn, tenant, action="export", actor=actor, scope={"format": fmt, "embeddings": include_embeddings},
                                 counts=manifest["counts"], at=at)
        return manifest

    # --- import ------------------------------------------------------------------------------

    def import_(self, source: str | Path | dict[str, Any], *, actor: str = "api", as_user: Any = UNSET) -> ImportReport:
        """Import an export (a path to JSON or JSONL, or the dict :meth:`export` returns).

        Records may only belong to the tenants the manifest declares; ``as_user`` imports a
        one-tenant export under another ``user_id`` (None: the anonymous bucket). Every record
        meets the API's rules and the manifest's digests are checked before anything is
        written; the import is one transaction. Records the tenant already holds are kept:
        the same id is the same record, and blocks, keys and task states are replaced only by
        a newer ``updated_at``, so importing a file twice is the same as once and an older
        export never overwrites newer state. Vectors made with another model (or none) are
        re-embedded with this store's model. Audit entries from the file are kept as imported
        history (``origin="imported"``).
        """
        actor = check_name(actor, "actor")
        checked = importer.validate(source, self.max_content_bytes, as_user=as_user)
        vectors, reembedded = import_writer.vectors_needed(self, checked)
        at = utcnow()
        with self._db.write() as conn:
            outcomes = import_writer.apply(self, conn, checked, vectors, actor=actor, at=at, as_user=as_user is not UNSET)
        return ImportReport(
            tenants=[t.user_id for t in dict.fromkeys(checked.targets.values())],
            counts=outcomes[import_writer.WRITTEN], unchanged=outcomes[import_writer.UNCHANGED],
            kept_existing=outcomes[import_writer.KEPT], reembedded=reembedded, manifest=checked.manifest,
        )

    # --- forget ------------------------------------------------------------------------------

    def forget(
        self,
        *,
        user_id: Any = UNSET,
        session_id: str | None = None,
        before: datetime | None = None,
        dry_run: bool = False,
        actor: str = "api",
    ) -> ForgetReceipt:
        """Erase a tenant, one of its sessions, or what is older than ``before``, and everything
        derived from it, down to the bytes on disk. Returns a receipt (counts, never content).

        ``dry_run=True`` returns the same counts and changes nothing. Other tenants are not
        touched. The erasure is one transaction: a crash leaves all of the scope or none of it.
        """
        tenant = self._tenant(user_id)
        if session_id is not None:
            check_name(session_id, "session_id")
        before = check_optional_datetime(before, "before")
        actor = check_name(actor, "actor")
        scope = forget.Scope(tenant, session_id, before)
        scope_record = {"session_id": session_id, "before": None if before is None else before.isoformat()}
        at = utcnow()
        if dry_run:
            with self._db.read() as conn:
                self._require_session(conn, tenant, session_id)
                counts = forget.count(conn, scope)
            return ForgetReceipt(user_id=tenant.user_id, session_id=session_id, before=before, dry_run=True, counts=counts,
                                 at=at, actor=actor, digest=audit.digest("forget", tenant, scope_record, counts, at))
        with self._db.write() as conn:
            self._require_session(conn, tenant, session_id)
            counts = forget.delete(conn, scope)
            digest = audit.record(conn, tenant, action="forget", actor=actor, scope=scope_record, counts=counts, at=at)
        self._indexer.cache.clear(tenant)
        scrubbed = self.scrub()
        return ForgetReceipt(user_id=tenant.user_id, session_id=session_id, before=before, dry_run=False, counts=counts,
                             at=at, actor=actor, digest=digest, disk_scrubbed=scrubbed)

    def scrub(self) -> bool:
        """Make deleted content unrecoverable from the files: rewrite the keyword indexes and
        truncate the WAL. Returns False if a reader in another process held the WAL; call again."""
        export_file.remove_leftover_exports(self._db)
        if self.read_only:
            return False
        with self._db.write() as conn:
            forget.rewrite_keyword_indexes(conn)
        with self._db.raw() as raw:
            return forget.truncate_wal(raw)

    @staticmethod
    def _require_session(conn, tenant: Tenant, session_id: str | None) -> None:
        if session_id is None:
            return
        known = conn.execute(tenant.select(sessions_t, sessions_t.c.pk).where(sessions_t.c.session_id == session_id)).first()
        known = known or conn.execute(tenant.select(episodes_t, episodes_t.c.pk).where(episodes_t.c.session_id == session_id).limit(1)).first()
        if not known:
            raise UnknownSessionError(f"no session {session_id!r} for this user; nothing was erased")

    # --- audit -------------------------------------------------------------------------------

    def audit_log(self, *, user_id: Any = UNSET, all_tenants: bool = False, limit: int = 1000, origin: str | None = None) -> list[AuditEntry]:
        """Audit entries, newest first: one tenant's, or with ``all_tenants=True`` the whole store's.

        ``origin="local"`` keeps what happened in this store, ``origin="imported"`` the history
        that arrived in import files; None gives both, each entry saying which it is."""
        check_flag(all_tenants, "all_tenants")
        check_int(limit, "limit", minimum=1)
        if origin not in (None, "local", "imported"):
            raise InvalidInputError("origin must be 'local', 'imported' or None")
        with self._db.read() as conn:
            if all_tenants:
                stmt = audit_t.select()
            else:
                stmt = self._tenant(user_id).select(audit_t)
            if origin is not None:
                stmt = stmt.where(audit_t.c.origin == origin)
            rows = conn.execute(stmt.order_by(audit_t.c.at.desc(), audit_t.c.pk.desc()).limit(limit)).all()
        return [audit.to_model(r) for r in rows]


