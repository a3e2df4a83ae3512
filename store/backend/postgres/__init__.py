"""The PostgreSQL backend: schema and migrations (:mod:`.ddl`), one LIST partition per tenant
(:mod:`.partitions`), and the erasure sequence that leaves no erased byte in the data
directory (:mod:`.erasure`). Needs the ``postgres`` extra (psycopg, pgvector) and a server
with the pgvector extension available."""
