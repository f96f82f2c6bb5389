"""A stub of the GDC API and the GTEx image service on 127.0.0.1, serving real slide files.

GDC:  GET /gdc/files/<uuid>  -> {"data": {"file_name", "file_size", "md5sum"}}
      GET /gdc/data/<uuid>   -> the bytes (Range honoured unless `ranges` is off)
GTEx: GET /gtex/<sample id>  -> the bytes
Kaggle: GET /kaggle/competitions/data/list/<competition>[?pageToken=t] -> {"files": [{"name",
        "totalBytes"}], "nextPageToken"} (two files a page); GET /kaggle/competitions/data/download/
        <competition>/<name> -> the bytes; the basic-auth user of each request is recorded

Faults a test switches on: `ranges=False` (Range ignored, 200 with the whole body), `fail[path] = n`
(the next n requests answer `fail_status`, 500 unless set, with `retry_after` as their Retry-After
header when set), `drop[path] = k` (the next reply sends its full Content-Length but
closes after k bytes), `md5[uuid]` (the md5 the metadata announces), `rate` (bytes/s per stream).
Every request is recorded: path, Range header, status, body bytes sent and arrival time.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

_RANGE = re.compile(r"bytes=(\d+)-$")


@dataclass
class Request:
    path: str
    range: str | None
    status: int
    sent: int = 0
    at: float = field(default_factory=time.monotonic)  # arrival: the gaps are the client's waits


@dataclass
class Stub:
    gdc: dict[str, Path] = field(default_factory=dict)  # uuid -> file
    gtex: dict[str, Path] = field(default_factory=dict)  # sample id -> file
    kaggle: dict[str, Path] = field(default_factory=dict)  # competition file name -> file
    kaggle_users: list[str] = field(default_factory=list)  # the basic-auth user of each Kaggle request
    md5: dict[str, str] = field(default_factory=dict)  # uuid -> announced md5 (default: the real one)
    ranges: bool = True
    fail: dict[str, int] = field(default_factory=dict)
    fail_status: int = 500
    retry_after: str | None = None
    drop: dict[str, int] = field(default_factory=dict)
    rate: float | None = None
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def gdc_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/gdc"

    @property
    def kaggle_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/kaggle"

    @property
    def gtex_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/gtex"

    def data_requests(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path == path]


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            record = Request(path=path, range=self.headers.get("Range"), status=0)
            with stub.lock:
                stub.requests.append(record)
                failing = stub.fail.get(path, 0)
                if failing:
                    stub.fail[path] = failing - 1
                drop = stub.drop.pop(path, None)
            if failing:
                extra = {"Retry-After": stub.retry_after} if stub.retry_after is not None else {}
                return self._reply(record, stub.fail_status, b"injected failure", extra)
            parts = path.strip("/").split("/")
            if parts[:2] == ["gdc", "files"] and parts[2] in stub.gdc:
                content = stub.gdc[parts[2]].read_bytes()
                meta = {
                    "file_name": stub.gdc[parts[2]].name,
                    "file_size": len(content),
                    "md5sum": stub.md5.get(parts[2], hashlib.md5(content).hexdigest()),
                }
                return self._reply(record, 200, json.dumps({"data": meta, "warnings": {}}).encode())
            if parts[:2] == ["gdc", "data"] and parts[2] in stub.gdc:
                return self._body(record, stub.gdc[parts[2]].read_bytes(), drop)
            if parts[:4] == ["kaggle", "competitions", "data", "list"]:
                return self._kaggle_list(record)
            if (
                parts[:4] == ["kaggle", "competitions", "data", "download"]
                and "/".join(parts[5:]) in stub.kaggle
            ):
                self._kaggle_user()
                return self._body(record, stub.kaggle["/".join(parts[5:])].read_bytes(), drop)
            if parts[0] == "gtex" and len(parts) == 2 and parts[1] in stub.gtex:
                return self._body(record, stub.gtex[parts[1]].read_bytes(), drop)
            return self._reply(record, 404, b'{"message": "not found"}')

        def _kaggle_user(self) -> None:
            header = self.headers.get("Authorization", "")
            user = base64.b64decode(header[6:]).decode().split(":")[0] if header.startswith("Basic ") else ""
            with stub.lock:
                stub.kaggle_users.append(user)

        def _kaggle_list(self, record: Request) -> None:
            self._kaggle_user()
            names = sorted(stub.kaggle)
            start = int(parse_qs(urlsplit(self.path).query).get("pageToken", ["0"])[0])
            page = [
                {"name": n, "totalBytes": stub.kaggle[n].stat().st_size} for n in names[start : start + 2]
            ]
            token = str(start + 2) if start + 2 < len(names) else ""
            return self._reply(record, 200, json.dumps({"files": page, "nextPageToken": token}).encode())

        def _body(self, record: Request, content: bytes, drop: int | None) -> None:
            start = 0
            match = _RANGE.match(record.range or "")
            if stub.ranges and match:
                start = int(match.group(1))
                if start >= len(content):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(content)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    record.status = 416
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
                record.status = 206
            else:
                self.send_response(200)
                record.status = 200
            body = content[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if drop is not None:  # promise the whole body, send part of it, hang up
                self.wfile.write(body[:drop])
                record.sent = drop
                self.wfile.flush()
                self.close_connection = True
                return
            self._stream(record, body)

        def _stream(self, record: Request, body: bytes) -> None:
            chunk = 1 << 16
            began = time.perf_counter()
            for offset in range(0, len(body), chunk):
                self.wfile.write(body[offset : offset + chunk])
                record.sent += min(chunk, len(body) - offset)
                if stub.rate:  # a per-stream cap, as over a long-distance link
                    ahead = record.sent / stub.rate - (time.perf_counter() - began)
                    if ahead > 0:
                        time.sleep(ahead)

        def _reply(
            self, record: Request, status: int, body: bytes, headers: dict[str, str] | None = None
        ) -> None:
            record.status = status
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            record.sent = len(body)

    return Handler


class StubServer:
    """Context manager: the stub served from a background thread on a free port."""

    def __init__(self, stub: Stub) -> None:
        self.stub = stub
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
        self.server.daemon_threads = True
        stub.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Stub:
        self.thread.start()
        return self.stub

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
