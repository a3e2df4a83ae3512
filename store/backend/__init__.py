"""The database engine behind the store."""
