"""The data-rights service: export, import, forget (and the scrub that finishes it) and the audit log."""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from sqlalchemy import Connection

from ..backend import Backend
from ..errors import InvalidInputError, MemlensError, StoreBusyError, StoreFullError, UnknownSessionError
from ..models import AuditEntry, ForgetReceipt, ImportReport, MigrationReport, PendingScrub
from ..recall.indexing import Indexer
from ..schema import audit_t, episodes_t, sessions_t, tenants_t, traces_t
from ..tenancy import UNSET, Tenant, all_tenants, in_groups, in_tenant_groups, require_history, require_tenant, tenants_having
from ..tiers import traces
from ..tiers.erasing import Scope
from ..tiers.importing import KEPT, UNCHANGED, WRITTEN
from ..tiers.registry import ERASE_ORDER, SECTION_OF, SECTIONS
from ..validation import check_flag, check_int, check_name, check_optional_datetime, utcnow
from . import audit, erasure, export, export_file, import_check, import_write, migrate

T = TypeVar("T")

# Seconds between two after-write checks for a pending scrub (one small read each).
SCRUB_RETRY_INTERVAL = 1.0


class DataRights:
    """Export, import, forget and audit over one backend, for tenants the façade has resolved
    (exports and imports name theirs in lists and files); the indexer embeds imported records
    and its cache is dropped after an erasure."""

    def __init__(self, backend: Backend, indexer: Indexer, *, max_content_bytes: int):
        self._db = backend
        self._indexer = indexer
        self.max_content_bytes = max_content_bytes
        self._scrub_lock = threading.Lock()  # held by whoever scrubs
        self._next_scrub_retry = 0.0

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    def require_tenant(self, tenant: Tenant, *, missing_ok: bool = False) -> bool:
        """Whether the store holds this tenant; unless ``missing_ok``, one it does not hold raises UnknownTenantError. See :meth:`store.memory.MemoryStore.require_tenant`."""
        with self._db.read() as conn:
            return require_tenant(conn, tenant, missing_ok=missing_ok)

    # --- export ------------------------------------------------------------------------------

    def export(
        self, *, user_id: Any = UNSET, include_embeddings: bool = False, actor: str = "api", missing_ok: bool = False
    ) -> dict[str, Any]:
        """Everything the store holds for one tenant, grouped by section, with a manifest; see :meth:`store.memory.MemoryStore.export`."""
        if user_id is UNSET:
            raise InvalidInputError("export needs user_id (None for the anonymous bucket); export_to(user_ids=None) exports every tenant")
        buffer = io.StringIO()
        manifest = self.export_to(
            buffer, user_ids=[user_id], fmt="jsonl", include_embeddings=include_embeddings, actor=actor, missing_ok=missing_ok
        )
        grouped: dict[str, Any] = {"manifest": manifest, **{s: [] for s in SECTIONS}}
        for line in buffer.getvalue().splitlines():
            record = json.loads(line)
            if record["type"] != "manifest":
                grouped[SECTION_OF[record["type"]]].append(record)
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
        """Stream an export of ``user_ids`` (None: every tenant) to a path or text stream; see :meth:`store.memory.MemoryStore.export_to`."""
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
            path = export_file.check_target(target, self._db.files(), overwrite=overwrite)
            export_file.remove_leftover_exports(self._db)
            with export_file.writing(self._db, path, overwrite=overwrite) as sink:
                manifest, counts_of = export.write(
                    self._db, tenants, sink, fmt=fmt, embeddings=include_embeddings, at=at, progress=progress
                )
        else:
            manifest, counts_of = export.write(self._db, tenants, target, fmt=fmt, embeddings=include_embeddings, at=at, progress=progress)
        if not self.read_only:
            # A group of tenants per transaction: a PostgreSQL write holds a lock per tenant it names.
            for group in in_groups(tenants, self._db.tenants_per_read):
                with self._db.write(*group, inserting=False) as conn:
                    for tenant in group:
                        audit.record(
                            conn,
                            tenant,
                            action="export",
                            actor=actor,
                            scope={"format": fmt, "embeddings": include_embeddings},
                            counts=counts_of[tenant],
                            at=at,
                        )
        return manifest

    # --- import ------------------------------------------------------------------------------

    def import_(
        self,
        source: str | Path | dict[str, Any],
        *,
        actor: str = "api",
        as_user: Any = UNSET,
        expect_counts: Mapping[str, int] | None = None,
    ) -> ImportReport:
        """Import an export (a path to JSON or JSONL, or the dict :meth:`export` returns); see :meth:`store.memory.MemoryStore.import_`."""
        actor = check_name(actor, "actor")
        expected = import_write.check_expected(expect_counts)
        checked = import_check.validate(source, self.max_content_bytes, as_user=as_user)
        vectors, reembedded = import_write.vectors_needed(self._db, self._indexer, checked)
        at = utcnow()
        with self._db.write(*dict.fromkeys(checked.targets.values())) as conn:
            outcomes = import_write.apply(
                conn,
                self._db.path,
                self._indexer,
                checked,
                vectors,
                actor=actor,
                at=at,
                as_user=as_user is not UNSET,
                max_bytes=self.max_content_bytes,
            )
            # Inside the transaction: a shortfall raises here and rolls every write back.
            import_write.require_held(outcomes, expected)
        return ImportReport(
            tenants=[t.user_id for t in dict.fromkeys(checked.targets.values())],
            counts=outcomes[WRITTEN],
            unchanged=outcomes[UNCHANGED],
            kept_existing=outcomes[KEPT],
            reembedded=reembedded,
            manifest=checked.manifest,
        )

    # --- migrate -----------------------------------------------------------------------------

    def migrate_from(
        self,
        source: Backend,
        *,
        into_existing: bool = False,
        reembed: bool = False,
        actor: str = "api",
        progress: Callable[[int, int], None] | None = None,
    ) -> MigrationReport:
        """Copy every tenant of ``source`` into this store, verified; see :meth:`store.memory.MemoryStore.migrate_from`."""
        check_flag(into_existing, "into_existing")
        check_flag(reembed, "reembed")
        actor = check_name(actor, "actor")
        report = migrate.migrate(
            source,
            self._db,
            self._indexer,
            into_existing=into_existing,
            reembed=reembed,
            actor=actor,
            max_bytes=self.max_content_bytes,
            progress=progress,
        )
        self._indexer.cache.clear()
        return report

    # --- forget ------------------------------------------------------------------------------

    def forget(
        self,
        tenant: Tenant,
        *,
        session_id: str | None = None,
        before: datetime | None = None,
        dry_run: bool = False,
        actor: str = "api",
        missing_ok: bool = False,
        facts_only: bool = False,
    ) -> ForgetReceipt:
        """Erase a tenant, one of its sessions, or what is older than ``before``, and everything derived from it. See :meth:`store.memory.MemoryStore.forget`."""
        if session_id is not None:
            check_name(session_id, "session_id")
        before = check_optional_datetime(before, "before")
        actor = check_name(actor, "actor")
        check_flag(facts_only, "facts_only")
        if facts_only and session_id is not None:
            raise InvalidInputError("facts belong to a tenant, not to a session: pass facts_only or session_id, not both")
        scope = Scope(tenant, session_id, before, facts_only)
        # Session ids are the agent's text (an e-mail address, a clinic and a date): the entry keeps
        # a digest that identifies the erased session to whoever knows its id, never the id itself.
        scope_record: dict[str, Any] = {
            "session": audit.session_digest(tenant, session_id),
            "before": None if before is None else before.isoformat(),
        }
        if facts_only:
            scope_record["facts_only"] = True
        at = utcnow()
        nothing = dict.fromkeys([*(tier.name for tier in ERASE_ORDER), "vectors"], 0)
        if dry_run:
            with self._db.read() as conn:
                counts = nothing
                if require_tenant(conn, tenant, missing_ok=missing_ok):
                    self._require_session(conn, tenant, session_id)
                    counts = erasure.count(conn, scope)
            return ForgetReceipt(
                user_id=tenant.user_id,
                session_id=session_id,
                before=before,
                dry_run=True,
                counts=counts,
                at=at,
                actor=actor,
                digest=audit.digest("forget", tenant, scope_record, counts, at),
            )
        if self._erasure_under_way(tenant):
            return self._finish_erasure(tenant)
        with self._scrub_lock:  # so the writes below do not start the after-write retry
            with self._db.write(tenant, inserting=False) as conn:
                counts, in_steps = nothing, False
                if require_tenant(conn, tenant, missing_ok=missing_ok):
                    self._require_session(conn, tenant, session_id)
                    in_steps = scope.whole_tenant
                    counts = erasure.count(conn, scope) if in_steps else erasure.delete(conn, scope)
                digest = audit.record(
                    conn, tenant, action="forget", actor=actor, scope=scope_record, counts=counts, at=at, status={"disk_scrubbed": False}
                )
                if in_steps:
                    erasure.begin_tenant_erasure(conn, tenant, digest)
                else:
                    erasure.count_erasure(conn)
                    erasure.mark_pending(conn, tenant, digest, at)
            # Only this tenant's vectors changed: other tenants keep their matrices and indexes.
            self._indexer.cache.drop_tenant(tenant.key)
            self._db.keyword.drop_tenant(tenant)
            self._indexer.cache.erase_saved(tenant.key)
            if in_steps:
                try:
                    self._erase_in_steps(tenant)
                except StoreFullError:
                    raise StoreFullError(
                        f"the disk filled while {'the anonymous bucket' if tenant.is_anonymous else repr(tenant.key)} was being erased: the erasure is recorded (digest {digest[:12]}) "
                        "and the tenant is already hidden from every read, but part of its data is still in the file. "
                        "Free space, then run forget again (or open the store, or run `memlens scrub`): it finishes this erasure"
                    ) from None
            return self._scrubbed_receipt(tenant, session_id, before, counts, at, actor, digest)

    def _erasure_under_way(self, tenant: Tenant) -> bool:
        """Whether the tenant's erasure was committed and not finished (the disk filled, the process died)."""
        with self._db.read() as conn:
            return tenant in erasure.tenant_erasures_under_way(conn)

    def _finish_erasure(self, tenant: Tenant) -> ForgetReceipt:
        """A forget of a tenant whose erasure is under way finishes it, rather than saying the
        tenant does not exist; the receipt is that erasure's (its audit entry's counts and digest)."""
        with self._scrub_lock:
            self._erase_in_steps(tenant)
            entry = next(e for e in self.audit_log(tenant) if e.action == "forget" and e.origin == "local")  # newest first
            return self._scrubbed_receipt(tenant, None, None, dict(entry.counts), entry.at, entry.actor, entry.digest)

    def _scrubbed_receipt(
        self, tenant: Tenant, session_id: str | None, before: datetime | None, counts: dict[str, int], at: datetime, actor: str, digest: str
    ) -> ForgetReceipt:
        """The scrub (holding the scrub lock), then the receipt that says how it went."""
        try:
            scrubbed, reason = self._scrub_locked(budget=1.0)
        except StoreBusyError as error:
            scrubbed, reason = False, f"{error}; the scrub stays pending"
        return ForgetReceipt(
            user_id=tenant.user_id,
            session_id=session_id,
            before=before,
            dry_run=False,
            counts=counts,
            at=at,
            actor=actor,
            digest=digest,
            disk_scrubbed=scrubbed,
            scrub_pending_reason=reason,
            out_of_reach=self._db.out_of_reach,
        )

    def _erase_in_steps(self, tenant: Tenant) -> None:
        """The steps of a committed whole-tenant erasure, each its own short write transaction
        (:func:`store.rights.erasure.erase_step`); the tenant's own writers wait meanwhile, so the
        steps name no tenant."""
        erasure.erase_in_steps(lambda: self._db.write(inserting=False, whole_store=False), tenant)
        self._indexer.cache.drop_tenant(tenant.key)
        self._db.keyword.drop_tenant(tenant)
        self._indexer.cache.erase_saved(tenant.key)

    def _finish_tenant_erasures(self) -> None:
        """Roll forward every whole-tenant erasure a process committed and did not finish."""
        with self._db.read() as conn:
            under_way = erasure.tenant_erasures_under_way(conn)
        for tenant in under_way:
            self._erase_in_steps(tenant)

    def scrub(self) -> bool:
        """Make deleted content unrecoverable from the files (expired key-value entries deleted, indexes rewritten, the WAL emptied). See :meth:`store.memory.MemoryStore.scrub`."""
        return self._scrub(budget=1.0, rewrite=True)[0]

    def pending_scrub(self) -> PendingScrub | None:
        """Erasures whose rows are gone but whose bytes may still be in the files, if any."""
        with self._db.read() as conn:
            pending = erasure.read_pending(conn)
        if pending is None:
            return None
        return PendingScrub(
            erasures=len(pending["erasures"]),
            since=datetime.fromisoformat(pending["since"]),
            digests=[d for _, d in pending["erasures"]],
            indexes_rewritten=not pending["indexes"],
        )

    def _scrub(self, *, budget: float, rewrite: bool = False) -> tuple[bool, str | None]:
        """Finish unfinished erasures, then scrub. Not what the after-write retry runs: an
        agent's write must not wait while it finishes another process's erasure."""
        with self._scrub_lock:
            if not self.read_only:
                self._finish_tenant_erasures()
            return self._scrub_locked(budget=budget, rewrite=rewrite)

    def _scrub_locked(self, *, budget: float, rewrite: bool = False) -> tuple[bool, str | None]:
        """Finish what erasures left on disk, holding ``_scrub_lock``. ``rewrite`` rewrites the
        keyword indexes even if no erasure asks for it. Returns (done, why not).

        Only erasures already committed when it starts are marked done: one committed while the
        indexes were being merged stays pending (its own scrub, or the next one, finishes it)."""
        if self.read_only:
            return False, "the store is open read-only; open it read-write to scrub"
        export_file.remove_leftover_exports(self._db)  # a killed export's partial file holds personal data too
        with self._db.read() as conn:
            pending, erasures = erasure.read_pending(conn), erasure.erasure_count(conn)
        expiring = self._across_tenants(lambda conn, keys: erasure.tenants_with_expired_kv(conn, utcnow(), keys))
        taken = [] if pending is None else pending["erasures"]
        if (rewrite or (pending is not None and pending["indexes"])) and not self._db.rewrite_keyword_indexes():
            return False, "agents wrote faster than the keyword indexes could be merged; the scrub stays pending"
        self._purge_expired(expiring)
        # Store-wide records only (each change under their lock): no tenant's writers wait.
        with self._db.write(inserting=False, whole_store=False) as conn:
            erasure.lock_records(conn)
            now_pending = erasure.read_pending(conn)
            if now_pending is not None and now_pending["indexes"] and erasure.erasure_count(conn) == erasures:
                now_pending["indexes"] = False
                erasure.write_pending(conn, now_pending)
            expired = [] if now_pending is None else now_pending.get("expired", [])
        for key, _ in taken:  # again here: this rolls forward an erasure whose process died before it
            self._indexer.cache.erase_saved(key)
        done, reason = self._db.flush_erased_pages(budget, [Tenant(key) for key, _ in taken], [Tenant(key) for key in expired])
        if done and (taken or expired):
            with self._db.write(inserting=False, whole_store=False) as conn:
                erasure.lock_records(conn)
                now_pending = erasure.read_pending(conn)
                if now_pending is not None:
                    now_pending["erasures"] = [e for e in now_pending["erasures"] if e not in taken]
                    now_pending["expired"] = [k for k in now_pending.get("expired", []) if k not in expired]
                    erasure.write_pending(conn, now_pending)
                audit.mark_scrubbed(conn, taken, utcnow())
        return done, reason

    def _across_tenants(self, find: Callable[[Connection, list[str] | None], list[T]]) -> list[T]:
        """What ``find`` finds across every tenant's rows, a few tenants a read on PostgreSQL
        (:func:`~store.tenancy.in_tenant_groups`)."""
        return in_tenant_groups(self._db.read, tenants_t, self._db.tenants_per_read, find)

    def _purge_expired(self, tenants: list[Tenant]) -> int:
        """Delete expired key-value entries tenant by tenant (each under its own writer lock,
        so no other tenant waits), recording for each that its bytes still need scrubbing."""
        purged = 0
        for tenant in tenants:
            with self._db.write(tenant, inserting=False) as conn:
                purged += erasure.purge_tenant_expired_kv(conn, tenant, utcnow())
        return purged

    def purge_expired(self, *, traces_before: datetime) -> int:
        """Delete every expired key-value entry and every recall trace made before
        ``traces_before`` of every tenant, then scrub their bytes as after an erasure (a reader
        in the way leaves the scrub pending, finished later); see
        :meth:`store.memory.MemoryStore.purge_expired`."""
        with self._scrub_lock:
            expiring = self._across_tenants(lambda conn, keys: erasure.tenants_with_expired_kv(conn, utcnow(), keys))
            old_traces = self._across_tenants(lambda conn, keys: tenants_having(conn, traces_t, traces_t.c.at < traces_before, keys=keys))
            purged = self._purge_expired(expiring)
            for tenant in old_traces:
                with self._db.write(tenant, inserting=False) as conn:
                    purged += traces.trim_expired(conn, tenant, traces_before)
            if purged:
                try:
                    self._scrub_locked(budget=1.0)
                except StoreBusyError:
                    pass  # the purge committed; the scrub stays pending for the next try
        return purged

    def finish_scrubs(self, *, budget: float) -> None:
        """On open: run a pending scrub (and delete expired entries) if there is one. A store
        too busy to scrub now still opens; the work stays pending."""
        if self.read_only:
            return
        with self._db.read() as conn:
            needed = erasure.read_pending(conn) is not None or bool(erasure.tenant_erasures_under_way(conn))
        needed = needed or any(self._across_tenants(lambda conn, keys: [erasure.has_expired_kv(conn, utcnow(), keys)]))
        if needed:
            with contextlib.suppress(StoreBusyError):
                self._scrub(budget=budget)

    def after_write(self) -> None:
        """After each committed write, at most once a second: retry a pending scrub (any
        process's) with a single checkpoint attempt that never waits for the lock, so a scrub
        left pending by a reader finishes soon after the reader does. Only the WAL step: index
        rewrites still owed belong to the forget under way, or to the next open if it died."""
        now = time.monotonic()
        if now < self._next_scrub_retry or not self._scrub_lock.acquire(blocking=False):
            return
        try:
            self._next_scrub_retry = now + SCRUB_RETRY_INTERVAL
            with self._db.read() as conn:
                pending = erasure.read_pending(conn)
            if pending is not None and not pending["indexes"]:
                self._scrub_locked(budget=0)
        except MemlensError:
            pass  # the write itself succeeded; the scrub stays pending for the next try
        finally:
            self._scrub_lock.release()

    @staticmethod
    def _require_session(conn: Connection, tenant: Tenant, session_id: str | None) -> None:
        if session_id is None:
            return
        known = conn.execute(tenant.select(sessions_t, sessions_t.c.pk).where(sessions_t.c.session_id == session_id)).first()
        # A session is known by its own row, its episodes, or the recalls an agent filtered to it.
        for table in (episodes_t, traces_t):
            known = known or conn.execute(tenant.select(table, table.c.pk).where(table.c.session_id == session_id).limit(1)).first()
        if not known:
            raise UnknownSessionError(f"no session {session_id!r} for this user; nothing was erased")

    # --- audit -------------------------------------------------------------------------------

    def audit_log(
        self,
        tenant: Tenant | None,
        *,
        limit: int = 1000,
        origin: str | None = None,
        missing_ok: bool = True,
    ) -> list[AuditEntry]:
        """Audit entries, newest first: ``tenant``'s, or with None the whole store's; see :meth:`store.memory.MemoryStore.audit_log`."""
        check_flag(missing_ok, "missing_ok")
        check_int(limit, "limit", minimum=1)
        if origin not in (None, "local", "imported"):
            raise InvalidInputError("origin must be 'local', 'imported' or None")
        with self._db.read() as conn:
            if tenant is None:
                stmt = audit_t.select()
            else:
                stmt = tenant.select(audit_t)
            if origin is not None:
                stmt = stmt.where(audit_t.c.origin == origin)
            rows = conn.execute(stmt.order_by(audit_t.c.at.desc(), audit_t.c.pk.desc()).limit(limit)).all()
            if not rows and tenant is not None and not missing_ok:
                require_history(conn, tenant, audit_t)
        return [audit.to_model(r) for r in rows]
