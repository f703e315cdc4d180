"""tunebus's one exception type, shaped after the wire protocol's `error` reply."""


class TuneError(Exception):
    """An error from tunebus: a refused request, an invalid experiment, an unreachable suite.

    `code` is the server's error code when the scheduler answered one (proto/PROTOCOL.md §1:
    `invalid_argument`, `not_found`, `failed_precondition`, `resource_exhausted`, `unavailable`,
    `corruption`, `internal`, `io_error`); errors found on the driver's side use the same codes
    (`invalid_argument` for a bad param space, `unavailable` for a suite that does not answer).
    `message` is the human-readable reason. Ray Tune 2.x's `ray.tune.TuneError` has no code:
    `TuneError(message)` (Ray's form, e.g. `tune.run`'s "Trials did not complete: ...") has
    `code` None. `str(e)` is "<code>: <message>", or the message without a code.
    """

    def __init__(self, code, message=None):
        if message is None:  # Ray's TuneError(message), also raised by user code
            code, message = None, code
        super().__init__(message if code is None else "%s: %s" % (code, message))
        self.code = code
        self.message = message
