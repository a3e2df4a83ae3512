"""What the command line itself refuses (not the store): one module, so that every command can
raise it without importing another command's module."""


class CommandLineError(Exception):
    """A request the command line itself refuses; printed as one line, exit status 2."""
