"""The SQLite backend: everything that knows the store is an SQLite file."""
