"""The demo stores' content, written by hand: templates with seeded slots, no downloads."""
