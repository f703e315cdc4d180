"""The package's one channel to a suite: the scheduler's control socket (proto/PROTOCOL.md §2).

`ControlClient` speaks the control protocol (proto/control.hpp) over a ZeroMQ DEALER with msgpack
maps, as `tunectl` does: every request is `{v, type, id, ...fields}`; the answer is a
`control_reply` whose `body_json` is the body, a typed reply (`checkpoint_chunk`), or an `error`
`{code, message}`, which becomes TuneError(code, message). Against a connected suite with
TUNEBUS_KEYS_DIR set, tcp:// sockets use CURVE with the user's keypair (tunebus._curve); the
embedded suite runs without keys (tunebus._suite decides which endpoint is which).

The requests the driver makes, each the one `tunectl` makes for the same step
(services/tunectl): `submit` with its working_dir upload (`tunectl run`), `resume`
(`run --resume auto`, `tunectl resume`), `get_experiment` / `list_trials` (`status`, `trials`),
`stop_experiment` (Ctrl-C of `run`, `tunectl stop`), `export_checkpoint`
(`tunectl checkpoint export`), `request` for the rest (`stop_trial_command`, ...); and
`list_results` / `trial_results`, a trial's reported results, which the ResultGrid and
ExperimentAnalysis read instead of the results folder (a driver on another host has none).
`EventSubscription` reads the scheduler's event stream (PROTOCOL.md §6) for the callbacks and
verbose=2's result lines (`tunectl watch`).
"""

import collections
import io
import json
import os
import shutil
import tarfile
import tempfile

from tunebus import _deps
from tunebus._errors import TuneError

PROTOCOL_VERSION = 1
CHUNK_BYTES = 4 << 20  # the largest working_dir_put chunk the scheduler takes (4 MiB)
RESULTS_WINDOW = 16  # list_results requests trial_results_many keeps in flight


class ControlClient:
    """Requests to the scheduler control endpoint `endpoint` (`tcp://host:port`, `ipc://path`).
    Each request opens one DEALER socket, sends, and waits at most `timeout_s` seconds; no answer
    is TuneError `unavailable`. `secure`: use CURVE (None: as tunebus._suite.secured says for the
    endpoint). Not shared between threads."""

    def __init__(self, endpoint, timeout_s=10.0, secure=None):
        self.zmq = _deps.load("zmq")
        self.msgpack = _deps.load("msgpack")
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._secure = secure
        self._next_id = 1

    def _secured(self):
        if self._secure is None:
            from tunebus import _suite

            self._secure = _suite.secured(self.endpoint)
        return self._secure

    def _connect(self):
        """A DEALER connected to the endpoint (CURVE when secured); the caller closes it."""
        from tunebus import _curve

        zmq = self.zmq
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            if self._secured():
                _curve.make_client(sock, self.endpoint)
            sock.connect(self.endpoint)
        except BaseException:
            sock.close()
            raise
        return sock

    def _send(self, sock, type_, fields):
        """Sends request `type_` with `fields` on `sock`; returns its id."""
        request_id = self._next_id
        self._next_id += 1
        msg = {"v": PROTOCOL_VERSION, "type": type_, "id": request_id}
        msg.update(fields)
        sock.send(self.msgpack.packb(msg, use_bin_type=True))
        return request_id

    def _receive(self, sock, type_):
        """The next reply map on `sock`. Errors: TuneError `unavailable` when none comes within
        timeout_s (saying so when the embedded suite has exited, with its log's last lines), the
        server's error as TuneError."""
        if not sock.poll(int(self.timeout_s * 1000)):
            from tunebus import _suite

            raise TuneError(
                "unavailable",
                "the scheduler at %s did not answer %s within %g s%s"
                % (self.endpoint, type_, self.timeout_s, _suite.exit_note(self.endpoint)),
            )
        reply = self.msgpack.unpackb(sock.recv(), raw=False)
        if reply.get("type") == "error":
            raise TuneError(reply.get("code", "internal"), reply.get("message", ""))
        return reply

    def call(self, type_, **fields):
        """Sends request `type_` with `fields`; returns the decoded reply map (of any type).
        Errors: TuneError with the server's code and message; `unavailable` on no answer."""
        sock = self._connect()
        try:
            self._send(sock, type_, fields)
            return self._receive(sock, type_)
        finally:
            sock.close()

    def request(self, type_, **fields):
        """A request answered by `control_reply`: returns its body (parsed JSON; None when
        empty). Errors as `call`."""
        reply = self.call(type_, **fields)
        if "body_json" in reply:
            return json.loads(reply["body_json"]) if reply["body_json"] else None
        return reply

    # ---- experiments ---------------------------------------------------------------------------
    def get_experiment(self, experiment=""):
        """The experiment summary (PROTOCOL.md §2 get_experiment): name, status, counts, total,
        finished, best, results_dir, metric, mode, journal, ... `experiment`: a name, a journal
        name, or "" for the scheduler's current one."""
        return self.request("get_experiment", experiment=experiment)

    def list_trials(self, experiment="", status=""):
        """The experiment's trial objects (a list), those of `status` when it is given."""
        return self.request("list_trials", status=status, experiment=experiment) or []

    def list_results(self, experiment, trial_id, offset=0, limit=0):
        """One page of a trial's reported results (PROTOCOL.md §2 list_results): `{experiment
        (journal name), trial_id, offset, total, next_offset (None on the last page), results:
        [result dicts, oldest first]}`; `limit` 0 = the scheduler's cap (10,000 rows, about
        1 MiB). Errors: not_found (experiment, trial), invalid_argument (offset, limit)."""
        return self.request(
            "list_results", experiment=experiment, trial_id=trial_id, offset=offset, limit=limit
        )

    def trial_results(self, experiment, trial_id):
        """Every result the trial reported, oldest first (each with Ray Tune's auto-filled keys
        and its `config`, as its result.json holds them): list_results page after page."""
        return self.trial_results_many(experiment, [trial_id])[trial_id]

    def trial_results_many(self, experiment, trial_ids, window=RESULTS_WINDOW):
        """{trial_id: every result it reported, oldest first} for each of `trial_ids`, over one
        socket with up to `window` list_results requests in flight (one per trial at a time, so
        each trial's pages arrive in order). Errors: the first refusal as TuneError (not_found,
        ...), `unavailable` when an answer does not come within timeout_s."""
        rows = {trial_id: [] for trial_id in trial_ids}
        waiting = collections.deque((trial_id, 0) for trial_id in rows)
        in_flight = {}  # request id -> trial id
        sock = self._connect()
        try:
            while waiting or in_flight:
                while waiting and len(in_flight) < window:
                    trial_id, offset = waiting.popleft()
                    fields = {"experiment": experiment, "trial_id": trial_id, "offset": offset}
                    in_flight[self._send(sock, "list_results", dict(fields, limit=0))] = trial_id
                reply = self._receive(sock, "list_results")
                trial_id = in_flight.pop(reply.get("id"), None)
                if trial_id is None:
                    continue
                page = json.loads(reply["body_json"])
                rows[trial_id].extend(page["results"])
                if page["next_offset"] is not None:
                    waiting.appendleft((trial_id, page["next_offset"]))
        finally:
            sock.close()
        return rows

    def submit(self, spec_yaml, base_dir, source_name, archive=None):
        """Submits an experiment file's text (`base_dir`: the folder its relative paths resolve
        against; `source_name`: its name in errors). `archive`: the shipped working_dir
        (tunebus._workdir.WorkingDirArchive), already stored with `upload_working_dir`. Returns
        the submission body (name, experiment_id, total, results_dir, ...). Errors: the
        scheduler's (invalid_argument for a bad file, not_found for an archive the store lacks,
        failed_precondition)."""
        fields = {"spec_yaml": spec_yaml, "base_dir": base_dir, "source_name": source_name}
        if archive is not None:
            fields.update(
                working_dir_digest=archive.digest, working_dir_size_bytes=len(archive.data)
            )
        return self.request("submit_experiment", **fields)

    def upload_working_dir(self, archive):
        """Stores `archive` in the checkpoint-store under its digest (working_dir_stat, then
        working_dir_put in chunks of at most 4 MiB). Returns True when it uploaded, False when the
        store held it. Errors: the scheduler's or store's (corruption, unavailable)."""
        stat = self.request("working_dir_stat", digest=archive.digest)
        if stat and stat.get("stored"):
            return False
        data = archive.data
        chunks = max(1, (len(data) + CHUNK_BYTES - 1) // CHUNK_BYTES)
        for index in range(chunks):
            self.request(
                "working_dir_put",
                digest=archive.digest,
                chunk_index=index,
                data=data[index * CHUNK_BYTES : (index + 1) * CHUNK_BYTES],
                last=index == chunks - 1,
            )
        return True

    def resume(self, name, rerun_errored=""):
        """Continues the experiment `name` (resume_experiment_command); `rerun_errored`
        "restore" / "restart" also reruns its ERROR trials. Returns the summary plus `rerun`.
        Errors: not_found; failed_precondition ("... is finished" when there is nothing to do)."""
        return self.request("resume_experiment_command", name=name, rerun_errored=rerun_errored)

    def stop_experiment(self, experiment="", interrupt=False):
        """Ends the experiment (`interrupt`: as INTERRUPTED, resumable). Returns its summary."""
        return self.request("stop_experiment", interrupt=interrupt, experiment=experiment)

    # ---- checkpoints ---------------------------------------------------------------------------
    def export_checkpoint(self, experiment, trial_id, checkpoint_id, target):
        """Writes a trial's stored checkpoint (`checkpoint_id`, "" for its newest) into the new or
        empty folder `target`, as `tunectl checkpoint export --to target`: the fetch_checkpoint
        chunks are one tar archive, unpacked into a hidden sibling that is renamed into place once
        every byte arrived, so a failure leaves nothing. Errors: TuneError (not_found,
        failed_precondition, unavailable; invalid_argument when `target` holds files)."""
        target = os.path.abspath(target)
        if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
            raise TuneError("invalid_argument", "%s exists and is not an empty folder" % target)
        fields = {"experiment": experiment, "trial_id": trial_id, "checkpoint_id": checkpoint_id}
        first = self.call("fetch_checkpoint", chunk_index=0, **fields)
        fields["checkpoint_id"] = first["checkpoint_id"]  # the same one throughout
        data = io.BytesIO(first["data"])
        data.seek(0, io.SEEK_END)
        for index in range(1, first["num_chunks"]):
            data.write(self.call("fetch_checkpoint", chunk_index=index, **fields)["data"])
        data.seek(0)
        parent = os.path.dirname(target)
        os.makedirs(parent, exist_ok=True)
        partial = tempfile.mkdtemp(prefix="." + os.path.basename(target) + ".", dir=parent)
        try:
            with tarfile.open(fileobj=data, mode="r:") as archive:
                _extract(archive, partial)
            if os.path.isdir(target):
                os.rmdir(target)
            os.rename(partial, target)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise


class EventSubscription:
    """A SUB socket on the scheduler's event stream (PROTOCOL.md §6) at `endpoint`, subscribed to
    `topics` (bytes prefixes such as b"trial", b"experiment"); `secure` as ControlClient's.
    `socket` is there to poll; `receive()` returns the next waiting event (None when none waits)
    as the scheduler_event map with `body` (its `body_json` parsed), skipping what is not one.
    Errors: TuneError from a missing key file when secured."""

    def __init__(self, endpoint, topics, secure=None):
        from tunebus import _curve

        self.zmq = _deps.load("zmq")
        self.msgpack = _deps.load("msgpack")
        self.socket = self.zmq.Context.instance().socket(self.zmq.SUB)
        self.socket.setsockopt(self.zmq.LINGER, 0)
        for topic in topics:
            self.socket.setsockopt(self.zmq.SUBSCRIBE, topic)
        if secure is None:
            from tunebus import _suite

            secure = _suite.secured(endpoint)
        try:
            if secure:
                _curve.make_client(self.socket, endpoint)
        except TuneError:
            self.socket.close()
            raise
        self.socket.connect(endpoint)

    def receive(self):
        while True:
            try:
                frames = self.socket.recv_multipart(self.zmq.NOBLOCK)
            except self.zmq.Again:
                return None
            try:
                event = self.msgpack.unpackb(frames[-1], raw=False)
                event["body"] = json.loads(event.get("body_json") or "{}")
            except (ValueError, TypeError, AttributeError):
                continue  # not a scheduler_event: ignored
            return event

    def close(self):
        self.socket.close()


def _extract(archive, folder):
    """Unpacks `archive` into `folder`, refusing members that would land outside it (Python's
    "data" filter where it has one, else the same check by hand)."""
    root = os.path.realpath(folder)
    if hasattr(tarfile, "data_filter"):
        try:
            archive.extractall(root, filter="data")
        except tarfile.FilterError as e:
            raise TuneError("corruption", "checkpoint archive: %s" % e) from None
        return
    for member in archive.getmembers():
        path = os.path.realpath(os.path.join(root, member.name))
        if member.issym():
            link = os.path.join(os.path.dirname(path), member.linkname)
        elif member.islnk():
            link = os.path.join(root, member.linkname)
        else:
            link = path
        for where in (path, os.path.realpath(link)):
            if where != root and not where.startswith(root + os.sep):
                raise TuneError(
                    "corruption", "checkpoint member %r leaves its folder" % member.name
                )
    archive.extractall(root)


__all__ = ["ControlClient", "EventSubscription", "PROTOCOL_VERSION"]
