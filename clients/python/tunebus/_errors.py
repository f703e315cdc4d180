"""tunebus's one exception type, shaped after the wire protocol's `error` reply."""


class TuneError(Exception):
    """An error from tunebus: a refused request, an invalid experiment, an unreachable suite.

    `code` is the server's error code when the scheduler answered one (proto/PROTOCOL.md §1:
    `invalid_argument`, `not_found`, `failed_precondition`, `resource_exhausted`, `unavailable`,
    `corruption`, `internal`, `io_error`); errors found on the driver's side use the same codes
    (`invalid_argument` for a bad param space, `unavailable` for a suite that does not answer).
    `message` is the human-readable reason. Ray Tune 2.x's `ray.tune.TuneError` has no code;
    `str(e)` is "<code>: <message>".
    """

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
