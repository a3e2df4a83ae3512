"""The inspector's widgets: the tier views and their tables, the detail pane, the overview, the footer."""
