"""The PostgreSQL backend, in parts not yet assembled into a :class:`store.backend.Backend`
(so ``MemoryStore.open`` does not accept PostgreSQL URLs yet): the schema and its migrations
(:mod:`.ddl`), one LIST partition per tenant (:mod:`.partitions`), the erasure sequence that
leaves no erased byte in the data directory (:mod:`.erasure`), connections that never let one
tenant's maintenance stall another (:mod:`.engine`), BM25 keyword search (:mod:`.keyword`),
exact and approximate vector search (:mod:`.vectors`), change detection by LISTEN/NOTIFY
(:mod:`.changes`) and the dialect's statements (:mod:`.sql`). Needs the ``postgres`` extra
(psycopg, pgvector) and a server with the pgvector extension available."""
