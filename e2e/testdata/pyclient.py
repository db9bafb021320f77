#!/usr/bin/env python3
"""A riot client written from docs/protocol.md and docs/values.md alone.

It uses nothing but Python 3's standard library: the websocket framing
(RFC 6455) and the CBOR (RFC 8949) it needs are written here. Run it
against a riotd:

    python3 pyclient.py ws://127.0.0.1:2355/riot

(with $RIOT_TOKEN set to a master's token when the tracker checks
credentials). It connects as a master and as a worker and walks through
the protocol: hello and welcome, blobs, submit with watch, credit and
assign, done, finished, info, memoization, a failed workunit, a request
with req 0, a GPU count no worker has, and cancel. With --limits, for a
riotd run with --max-frame-bytes 64KiB --ping-interval 1s, it checks the
limits instead: their values, an oversized spec, an oversized frame, and
the drop of a silent connection. It prints one line per step and exits 0
when every answer is what the documents say, 1 (with the reason) when one
is not.
"""

import base64
import hashlib
import os
import socket
import struct
import sys
import time
import urllib.parse

# --- CBOR ------------------------------------------------------------------


class Tag:
    """A CBOR tag and its item."""

    def __init__(self, tag, item):
        self.tag, self.item = tag, item

    def __eq__(self, other):
        return isinstance(other, Tag) and (self.tag, self.item) == (other.tag, other.item)

    def __repr__(self):
        return "Tag(%d, %r)" % (self.tag, self.item)


class Simple:
    """A CBOR simple value other than false, true and null (undefined is 23)."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Simple) and self.n == other.n

    def __repr__(self):
        return "Simple(%d)" % self.n


UNDEFINED = Simple(23)


def head(major, n):
    """The shortest head of major type major with argument n."""
    if n < 24:
        return bytes([major << 5 | n])
    if n < 1 << 8:
        return bytes([major << 5 | 24, n])
    if n < 1 << 16:
        return bytes([major << 5 | 25]) + struct.pack(">H", n)
    if n < 1 << 32:
        return bytes([major << 5 | 26]) + struct.pack(">I", n)
    return bytes([major << 5 | 27]) + struct.pack(">Q", n)


def enc(v):
    """Encodes v: int, bool, None, str, bytes, list, dict (str keys), Tag, Simple."""
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if v is None:
        return b"\xf6"
    if isinstance(v, Simple):
        return bytes([0xE0 | v.n])
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, float):
        return b"\xfb" + struct.pack(">d", v)
    if isinstance(v, (bytes, bytearray)):
        return head(2, len(v)) + bytes(v)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return head(3, len(b)) + b
    if isinstance(v, list):
        return head(4, len(v)) + b"".join(enc(x) for x in v)
    if isinstance(v, dict):
        return head(5, len(v)) + b"".join(enc(k) + enc(x) for k, x in v.items())
    if isinstance(v, Tag):
        return head(6, v.tag) + enc(v.item)
    raise TypeError("cannot encode %r" % (v,))


class Reader:
    """Decodes CBOR items from bytes, strictly: definite lengths only."""

    def __init__(self, data):
        self.b, self.i = data, 0

    def take(self, n):
        if self.i + n > len(self.b):
            raise ValueError("CBOR: %d bytes wanted at %d, %d left" % (n, self.i, len(self.b) - self.i))
        s = self.b[self.i:self.i + n]
        self.i += n
        return s

    def head(self):
        ib = self.take(1)[0]
        major, info = ib >> 5, ib & 31
        if info < 24:
            return major, info, info
        if info == 24:
            return major, info, self.take(1)[0]
        if info == 25:
            return major, info, struct.unpack(">H", self.take(2))[0]
        if info == 26:
            return major, info, struct.unpack(">I", self.take(4))[0]
        if info == 27:
            return major, info, struct.unpack(">Q", self.take(8))[0]
        raise ValueError("CBOR: indefinite or reserved head %#x at %d" % (ib, self.i - 1))

    def item(self):
        major, info, n = self.head()
        if major == 0:
            return n  # a Python int: 64 bits and more, never a double
        if major == 1:
            return -1 - n
        if major == 2:
            return self.take(n)
        if major == 3:
            return self.take(n).decode("utf-8")  # strict: invalid UTF-8 raises
        if major == 4:
            return [self.item() for _ in range(n)]
        if major == 5:
            out = {}
            for _ in range(n):
                k = self.item()
                out[k if not isinstance(k, list) else tuple(k)] = self.item()
            return out
        if major == 6:
            return Tag(n, self.item())
        # major 7
        if info == 25:
            return half(n)
        if info == 26:
            return struct.unpack(">f", struct.pack(">I", n))[0]
        if info == 27:
            return struct.unpack(">d", struct.pack(">Q", n))[0]
        return {20: False, 21: True, 22: None}.get(n, Simple(n))

    def end(self):
        if self.i != len(self.b):
            raise ValueError("CBOR: %d bytes after the item" % (len(self.b) - self.i))


def half(n):
    """The value of a half-precision float's bits."""
    exp, frac = (n >> 10) & 0x1F, n & 0x3FF
    if exp == 0:
        v = frac * 2.0 ** -24
    elif exp == 31:
        v = float("nan") if frac else float("inf")
    else:
        v = (1024 + frac) * 2.0 ** (exp - 25)
    return -v if n & 0x8000 else v


def dec(data):
    r = Reader(data)
    v = r.item()
    r.end()
    return v


# --- websocket (RFC 6455), the client side ---------------------------------

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Closed(Exception):
    """The tracker closed the connection: code (None: no close frame) and reason."""

    def __init__(self, code, reason):
        super().__init__("closed: %s %s" % (code, reason))
        self.code, self.reason = code, reason


class WebSocket:
    def __init__(self, url, timeout=20):
        u = urllib.parse.urlparse(url)
        if u.scheme != "ws":
            raise ValueError("only ws:// here, not %r" % u.scheme)
        self.sock = socket.create_connection((u.hostname, u.port or 2355), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: riot\r\n\r\n"
               % (u.path or "/riot", u.netloc, key))
        self.sock.sendall(req.encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the upgrade got no answer")
            resp += chunk
        hdr, self.buf = resp.split(b"\r\n\r\n", 1)
        lines = hdr.decode("latin-1").split("\r\n")
        if not lines[0].startswith("HTTP/1.1 101"):
            raise ConnectionError("upgrade refused: " + lines[0])
        fields = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if fields.get("sec-websocket-accept") != want:
            raise ConnectionError("bad Sec-WebSocket-Accept")
        self.subprotocol = fields.get("sec-websocket-protocol", "")

    def _recv(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed(None, "TCP closed without a close frame")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            h = struct.pack(">BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            h = struct.pack(">BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            h = struct.pack(">BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(h + mask + masked)

    def send_binary(self, data):
        self._send(0x2, data)

    def close(self, code=1000, reason=""):
        try:
            self._send(0x8, struct.pack(">H", code) + reason.encode())
        except OSError:
            pass
        self.sock.close()

    def recv_binary(self):
        """The next binary message; answers pings; raises Closed on a close."""
        message, first = b"", None
        while True:
            b0, b1 = self._recv(2)
            fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
            if b1 & 0x80:
                raise ValueError("a masked frame from the server")
            if n == 126:
                n = struct.unpack(">H", self._recv(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv(8))[0]
            payload = self._recv(n)
            if opcode == 0x9:  # ping
                self._send(0xA, payload)
                continue
            if opcode == 0xA:  # pong
                continue
            if opcode == 0x8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                raise Closed(code, payload[2:].decode("utf-8", "replace"))
            if opcode in (0x1, 0x2):
                first = opcode
            message += payload
            if fin:
                if first != 0x2:
                    raise ValueError("a text message from the tracker")
                return message


# --- riot ------------------------------------------------------------------

VERSION = 7
T_HELLO, T_WELCOME, T_REFUSED, T_ERROR = 1, 2, 3, 4
T_SUBMIT, T_ACCEPTED, T_WATCH, T_UNWATCH, T_FINISHED, T_INFO, T_INFO_REPLY = 5, 6, 7, 8, 9, 10, 11
T_BLOB_HAVE, T_BLOB_NEED, T_BLOB_PUT, T_BLOB_STORED = 12, 13, 14, 15
T_CREDIT, T_ASSIGN, T_DONE, T_FAILED, T_RETURN, T_BLOB_GET, T_BLOB_DATA = 16, 17, 18, 19, 20, 21, 22
T_CANCEL, T_CANCELED, T_REVOKE = 23, 24, 25
T_BLOB_WRITE, T_BLOB_WRITTEN, T_BLOB_READ, T_BLOB_PART = 26, 27, 28, 29
T_STATS, T_PRINT, T_PRINTED = 30, 31, 32
ZERO32 = bytes(32)


class Fail(Exception):
    pass


def check(cond, what, *args):
    if not cond:
        raise Fail(what % args if args else what)


class Conn:
    """One connection to the tracker: a master or a worker."""

    def __init__(self, url, role, name, slots=0, prefetch=0, token=""):
        self.ws = WebSocket(url)
        self.req = 0
        self.pending = []
        session = os.urandom(16).hex()
        self.send([T_HELLO, VERSION, role, name, session, slots, prefetch, [], token, "riot-pyclient/1 python" + sys.version.split()[0],
                   "pyclient" if role == "master" else "", 0])
        frame = self.frame()
        check(len(frame) == 1, "the answer to hello holds %d messages, not 1", len(frame))
        m = frame[0]
        if m[0] == T_REFUSED:
            raise Fail("refused: code %d: %s (tracker's version %d, ours %d)" % (m[1], m[2], m[3], VERSION))
        check(m[0] == T_WELCOME and len(m) == 7, "want a welcome, have %r", m)
        _, version, self.name, self.tracker, self.ping_interval, self.resumed, limits = m
        check(version == VERSION, "welcome's version %d", version)
        check(isinstance(limits, list) and len(limits) == 5, "limits %r", limits)
        self.limits = dict(zip(["max-frame-bytes", "max-messages", "max-spec-bytes", "max-result-bytes", "max-blob-bytes"], limits))

    def next_req(self):
        self.req += 1  # from 1: req 0 is not a request's
        return self.req

    def send(self, *msgs):
        frame = enc(list(msgs))
        check(len(frame) <= getattr(self, "limits", {}).get("max-frame-bytes", 1 << 30), "frame too large")
        self.ws.send_binary(frame)

    def frame(self):
        f = dec(self.ws.recv_binary())
        check(isinstance(f, list), "a frame that is not an array")
        for m in f:
            check(isinstance(m, list) and m and isinstance(m[0], int), "a message that is not [type, ...]: %r", m)
        return f

    def recv(self, want_type=None):
        """The next message (of want_type when given; others are an error)."""
        if not self.pending:
            self.pending = self.frame()
            if not self.pending:
                return self.recv(want_type)
        m = self.pending.pop(0)
        if want_type is not None:
            check(m[0] == want_type, "%s: want a message of type %d, have %r", self.name, want_type, m)
        return m


def outcome(m, at):
    """The outcome items of accepted, finished or info-reply, from m[at:]."""
    key, status, worker, result, error, console, last_change, elapsed = m[at:at + 8]
    return dict(key=key, status=status, worker=worker, result=result, error=error,
                console=console, last_change=last_change, elapsed=elapsed)


def eval_spec(source, name="py.js"):
    """An eval workunit's spec and its key (docs/protocol.md, the workunit spec)."""
    content = enc(1) + enc(source) + enc(name) + enc(ZERO32) + enc("") + enc(b"")
    spec = b"\x87" + content + enc([])
    key = hashlib.sha256(enc("riot-workunit-1") + content).digest()
    return spec, key


def step(msg):
    print("ok  " + msg, flush=True)


def run(url, token):
    m = Conn(url, "master", "py-master", token=token)
    check(m.ws.subprotocol == "riot", "subprotocol %r", m.ws.subprotocol)
    step("master connected as %s to %s (ping %d ms, limits %s)" % (m.name, m.tracker, m.ping_interval, m.limits))
    w = Conn(url, "worker", "py-worker", slots=1, prefetch=0, token=os.environ.get("RIOT_WORKER_TOKEN", token))
    step("worker connected as %s" % w.name)

    # Blobs: have, put, stored; the worker gets it back.
    data = enc([1, 2, 3])
    h = hashlib.sha256(data).digest()
    r = m.next_req()
    m.send([T_BLOB_HAVE, r, [h]])
    need = m.recv(T_BLOB_NEED)
    check(need[1] == r and need[2] in ([h], []), "blob-need %r", need)
    r = m.next_req()
    m.send([T_BLOB_PUT, r, h, data])
    stored = m.recv(T_BLOB_STORED)
    check(stored == [T_BLOB_STORED, r, h], "blob-stored %r", stored)
    r = w.next_req()
    w.send([T_BLOB_GET, r, h])
    got = w.recv(T_BLOB_DATA)
    check(got == [T_BLOB_DATA, r, h, data], "blob-data %r", got)
    r = w.next_req()
    missing = hashlib.sha256(b"nobody put this").digest()
    w.send([T_BLOB_GET, r, missing])
    check(w.recv(T_BLOB_DATA) == [T_BLOB_DATA, r, missing, None], "blob-data of a missing blob is null")
    step("blob-have, blob-put, blob-get")

    # A blob in pieces: the worker writes it, as it would a large result;
    # the master reads part of it.
    big = bytes(range(256)) * 40
    hb = hashlib.sha256(big).digest()
    for off in (0, 4096, 8192):
        r = w.next_req()
        w.send([T_BLOB_WRITE, r, hb, len(big), off, big[off:off + 4096]])
        got = w.recv(T_BLOB_WRITTEN)
        check(got == [T_BLOB_WRITTEN, r, hb, min(off + 4096, len(big))], "blob-written %r", got)
    r = m.next_req()
    m.send([T_BLOB_READ, r, hb, 6000, 5000])
    got = m.recv(T_BLOB_PART)
    check(got == [T_BLOB_PART, r, hb, len(big), 6000, big[6000:]], "blob-part %r", got[:5])
    step("blob-write in 3 pieces, blob-read")

    # Submit with watch: accepted (waiting), assign, done, finished.
    source = "6 * 7 + %d" % int(time.time() * 1000)  # a new key each run
    spec, key = eval_spec(source)
    r_sub = m.next_req()
    m.send([T_SUBMIT, r_sub, spec, False, 0, 0, True, 0, []])
    acc = m.recv(T_ACCEPTED)
    check(acc[1] == r_sub, "accepted's req")
    o = outcome(acc, 2)
    check(o["key"] == key, "the tracker's key %s is not ours %s", o["key"].hex(), key.hex())
    check(o["status"] in (1, 2), "accepted status %d", o["status"])
    step("submit: accepted, key %s" % key.hex()[:12])

    w.send([T_CREDIT, 1])
    a = w.recv(T_ASSIGN)
    check(len(a) == 7, "assign has %d items", len(a))
    _, a_key, token_, a_spec, realm, timeout, gpus = a
    check(a_key == key and a_spec == spec and gpus == 0, "assign %r", a)
    check(isinstance(token_, int) and token_ > 2 ** 53, "lease token %r: the documents say riotd's pass 2^53", token_)
    spec_items = dec(a_spec)
    check(spec_items[0] == 1 and spec_items[1] == source, "spec %r", spec_items)
    step("credit: assign, lease token %d (> 2^53)" % token_)

    # The "evaluation": this client runs no JavaScript; the source is plain arithmetic.
    value = eval(spec_items[1], {"__builtins__": {}})
    result = enc(value)
    # A console line while it runs: print, which the master gets at once
    # as printed; the done's console holds only the lines not printed.
    now_ms = int(time.time() * 1000)
    w.send([T_PRINT, key, token_, [["log", "while running", now_ms], ["warn", "careful", now_ms]]])
    p = m.recv(T_PRINTED)
    check(p[1] == key and p[2] == w.name and p[4] == 0, "printed %r", p)
    check(p[3] == [["log", "while running", now_ms], ["warn", "careful", now_ms]], "printed lines %r", p[3])
    step("print: the master got the lines as printed, from %s" % p[2])
    w.send([T_DONE, key, token_, result, [["log", "from python"]], 1234], [T_CREDIT, 1])
    fin = m.recv(T_FINISHED)
    check(fin[1] == r_sub, "finished's req %d, not the submit's %d", fin[1], r_sub)
    o = outcome(fin, 2)
    check(o["key"] == key and o["status"] == 3 and o["worker"] == w.name, "finished %r", o)
    check(dec(o["result"]) == value, "result %r", o["result"])
    check(o["error"] is None, "finished done with an error")
    check(o["console"] == [["log", "from python"]], "console %r", o["console"])
    check(o["elapsed"] == 1234, "elapsed %r", o["elapsed"])
    check(o["last_change"] > 1_600_000_000_000, "last-change %r", o["last_change"])
    step("done: finished with %r from %s" % (dec(o["result"]), o["worker"]))

    # Info: the result, without console or elapsed (the tracker keeps neither).
    r = m.next_req()
    m.send([T_INFO, r, key])
    info = m.recv(T_INFO_REPLY)
    o = outcome(info, 2)
    check(info[1] == r and o["status"] == 3 and dec(o["result"]) == value, "info-reply %r", info)
    check(o["elapsed"] == 0 and o["console"] == [], "info-reply keeps elapsed %r, console %r", o["elapsed"], o["console"])
    step("info: done, elapsed and console not kept")

    # Memoization: the same spec is answered from memory.
    r = m.next_req()
    m.send([T_SUBMIT, r, spec, False, 0, 0, False, 0, []])
    o = outcome(m.recv(T_ACCEPTED), 2)
    check(o["status"] == 3 and dec(o["result"]) == value, "a second submit: %r", o)
    step("memoized: accepted done")

    # Failed: throw 42, as a worker reports it; the tracker fills in worker and key.
    spec2, key2 = eval_spec("throw %d" % int(time.time() * 1000))
    r2 = m.next_req()
    m.send([T_SUBMIT, r2, spec2, False, 0, 0, True, 0, []])
    check(outcome(m.recv(T_ACCEPTED), 2)["key"] == key2, "accepted key2")
    a = w.recv(T_ASSIGN)
    w.send([T_FAILED, a[1], a[2], [1, "", "Uncaught 42", "", enc(42), "", b"", []], [], 10], [T_CREDIT, 1])
    o = outcome(m.recv(T_FINISHED), 2)
    err = o["error"]
    check(o["status"] == 4 and o["result"] == b"", "failed: status %d, result %r", o["status"], o["result"])
    check(err[0] == 1 and err[1] == "" and err[2] == "Uncaught 42" and dec(err[4]) == 42, "work-error %r", err)
    check(err[5] == w.name and err[6] == key2, "the tracker fills in worker and key: %r", err[5:])
    step("failed: error kind 1, worker %s filled in" % err[5])

    # A request with req 0 is refused, and the connection stays open.
    m.send([T_INFO, 0, key])
    e = m.recv(T_ERROR)
    check(e[1] == 0 and e[2] == 5, "req 0: %r", e)
    step("req 0: error 5 (%s)" % e[3])

    # A worker's token may not make the master's requests: cancel is one.
    if os.environ.get("RIOT_WORKER_TOKEN", token) != token:
        r = w.next_req()
        w.send([T_CANCEL, r, [key]])
        e = w.recv(T_ERROR)
        check(e[1] == r and e[2] == 11, "cancel with a worker's token: %r", e)
        step("worker token: cancel forbidden (%s)" % e[3])

    # A GPU count no worker has: accepted, and waits; then canceled.
    spec3, key3 = eval_spec("'needs 7 GPUs' + %d" % int(time.time() * 1000))
    r3 = m.next_req()
    m.send([T_SUBMIT, r3, spec3, False, 7, 0, True, 0, []])
    o = outcome(m.recv(T_ACCEPTED), 2)
    check(o["status"] == 1, "7 GPUs: status %d, want waiting", o["status"])
    r4 = m.next_req()
    m.send([T_CANCEL, r4, [key3]])
    got = {}
    for _ in range(2):
        msg = m.recv()
        got[msg[0]] = msg
    check(T_CANCELED in got and got[T_CANCELED] == [T_CANCELED, r4, [key3]], "canceled %r", got)
    check(T_FINISHED in got, "no finished after cancel: %r", got)
    o = outcome(got[T_FINISHED], 2)
    check(o["status"] == 4 and o["worker"] == "" and o["result"] == b"", "canceled outcome %r", o)
    check(o["error"][0] == 9 and o["error"][1] == "AbortError" and o["error"][2] == "canceled by " + m.name,
          "canceled error %r", o["error"])
    step("gpus 7: waiting; canceled: AbortError, result h''")

    # The worker returns nothing and leaves; the master closes.
    w.send([T_RETURN, []])
    w.ws.close(1001)
    m.ws.close(1000)
    step("closed")


def run_limits(url, token):
    """Limits and the silence drop, on a tracker run with --max-frame-bytes
    64KiB and --ping-interval 1s."""
    m = Conn(url, "master", "py-limits", token=token)
    frame_max = m.limits["max-frame-bytes"]
    derived = frame_max - min(64 << 10, frame_max // 4)
    for k in ("max-spec-bytes", "max-result-bytes"):
        check(m.limits[k] == derived, "%s is %d, not max-frame-bytes - min(64 KiB, max-frame-bytes/4) = %d", k, m.limits[k], derived)
    check(m.limits["max-blob-bytes"] == 1 << 30, "max-blob-bytes %d, not 1 GiB: it bounds a whole blob, which travels in pieces", m.limits["max-blob-bytes"])
    check(m.limits["max-messages"] == 65536, "max-messages %d", m.limits["max-messages"])
    step("limits derived from max-frame-bytes %d: %d" % (frame_max, derived))

    # A spec over max-spec-bytes: an error with its req, then close 1002.
    spec, _ = eval_spec("'" + "x" * m.limits["max-spec-bytes"] + "'")
    m.send([T_INFO, m.next_req(), ZERO32], [T_SUBMIT, 77, spec, False, 0, 0, True, 0, []])
    e = m.recv(T_ERROR)  # the info before it in the frame is dropped too
    check(e[1] == 77 and e[2] == 6, "an oversized spec: %r", e)
    try:
        m.recv()
        raise Fail("the connection stayed open after an oversized spec")
    except Closed as c:
        check(c.code == 1002, "an oversized spec closes with %r, not 1002", c.code)
    step("oversized spec: error 6 with its req, whole frame dropped, close 1002")

    # A blob-write of a blob over max-blob-bytes: an error with its req;
    # the connection stays open.
    m = Conn(url, "master", "py-limits", token=token)
    data = b"b" * 100
    m.send([T_BLOB_WRITE, 78, hashlib.sha256(data).digest(), m.limits["max-blob-bytes"] + 1, 0, data])
    e = m.recv(T_ERROR)
    check(e[1] == 78 and e[2] == 6, "an oversized blob-write: %r", e)
    r = m.next_req()
    m.send([T_INFO, r, ZERO32])
    check(m.recv(T_INFO_REPLY)[1] == r, "the connection answers after an oversized blob-write")
    step("oversized blob-write: error 6 with its req, the connection stays open")

    # A frame over max-frame-bytes: an error with req 0, then close 1009.
    m = Conn(url, "master", "py-limits", token=token)
    m.ws.send_binary(b"\x80" * (frame_max + 1))
    e = m.recv(T_ERROR)
    check(e[1] == 0 and e[2] == 6, "an oversized frame: %r", e)
    try:
        m.recv()
        raise Fail("the connection stayed open after an oversized frame")
    except Closed as c:
        check(c.code == 1009, "an oversized frame closes with %r, not 1009", c.code)
    step("oversized frame: error 6, close 1009")

    # Silence: a connection that reads nothing (so answers no ping) for
    # 2 x ping-interval is dropped by a bare TCP close.
    m = Conn(url, "master", "py-silent", token=token)
    time.sleep(3 * m.ping_interval / 1000)
    try:
        while True:
            m.recv()
    except Closed as c:
        check(c.code is None, "the silence drop sent a close frame %r", c.code)
    except OSError:
        pass  # the pong to a queued ping met the closed socket
    step("silence: dropped without a close frame")


def main():
    args = sys.argv[1:]
    limits = "--limits" in args
    args = [a for a in args if a != "--limits"]
    if len(args) != 1:
        print("usage: pyclient.py [--limits] ws://HOST:PORT/riot", file=sys.stderr)
        return 2
    try:
        if limits:
            run_limits(args[0], os.environ.get("RIOT_TOKEN", ""))
        else:
            run(args[0], os.environ.get("RIOT_TOKEN", ""))
    except (Fail, Closed, ValueError, OSError) as e:
        print("FAIL " + str(e), flush=True)
        return 1
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
