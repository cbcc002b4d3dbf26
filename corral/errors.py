"""The one error type the command line reports as a single line."""


class CorralError(Exception):
    """A user-facing failure: printed as `corral: error: <message>`, no traceback."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
