"""The inspector's screens other than the main one: dialogs, help, the timeline."""
