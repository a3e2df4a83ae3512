"""Data rights: export, import, forget (with its scrub of the files) and the audit log."""
