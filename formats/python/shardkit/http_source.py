"""Dataset files behind http(s) URLs, read with Range requests through the standard library
(src/io/http-source.ts, src/io/http-client.ts).

One keep-alive connection per host per process (a forked or spawned worker makes its own: no socket is shared
across processes); every socket operation has a timeout; 408/429/5xx, resets and timeouts are retried with
exponential backoff and jitter. A 206 must name exactly the asked range; each reply's total size and ETag must
match what the file showed before (a file replaced under the reader fails, with ``size_mismatch_code``).
"""
import base64
import http.client
import os
import random
import re
import socket
import ssl
import threading
import time
import weakref
from typing import Dict, Optional
from urllib.parse import unquote, urlsplit

from .errors import CLOSED, HTTP, INVALID_ARG, SHARD_MISSING, TRUNCATED, ShardkitError
from .location import redact_location

DEFAULT_RETRIES = 4
DEFAULT_TIMEOUT = 30.0
DEFAULT_BACKOFF = 0.1
DEFAULT_MAX_BACKOFF = 10.0
_CONTENT_RANGE = re.compile(r'bytes (\d+)-(\d+)/(\d+|\*)')
_UNSATISFIED_RANGE = re.compile(r'bytes \*/(\d+)')
_NETWORK_ERRORS = (OSError, http.client.HTTPException)  # socket.timeout and ssl errors are OSErrors


class _Transient(Exception):
    """A failure another attempt may fix; the last one becomes SHARDKIT_ERR_HTTP."""

    def __init__(self, message: str, retry_after: Optional[float] = None):
        super().__init__(message)
        self.retry_after = retry_after


_clients: 'weakref.WeakSet[HttpClient]' = weakref.WeakSet()


def _after_fork_in_child():
    for client in list(_clients):
        client._all_lock = threading.Lock()  # another thread may have held it at the fork


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class HttpClient:
    """Options shared by all files of a dataset: ``timeout`` (seconds, each connect and socket read),
    ``retries``, ``backoff`` / ``max_backoff`` (seconds), ``headers`` (sent with every request),
    ``cafile`` (a PEM file of certificates to trust for https, instead of the system's)."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                 backoff: float = DEFAULT_BACKOFF, max_backoff: float = DEFAULT_MAX_BACKOFF,
                 headers: Optional[Dict[str, str]] = None, cafile: Optional[str] = None):
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
            raise ShardkitError(INVALID_ARG, f'Expected a number of seconds above 0 for timeout but received {timeout!r}')
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 100:
            raise ShardkitError(INVALID_ARG, f'Expected an integer between 0 and 100 for retries but received {retries!r}')
        for name, v in (('backoff', backoff), ('max_backoff', max_backoff)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ShardkitError(INVALID_ARG, f'Expected a number of seconds of at least 0 for {name} but received {v!r}')
        if headers is not None and not (isinstance(headers, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
            raise ShardkitError(INVALID_ARG, f'Expected a dict of strings for headers but received {headers!r}')
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.headers = dict(headers or {})
        self.cafile = cafile
        self._ssl_context: Optional[ssl.SSLContext] = None
        self.requests = 0
        self.connections_made = 0
        self._local = threading.local()
        self._all: list = []
        """(pid, connections dict) of every thread that made one, for close()"""
        self._all_lock = threading.Lock()
        _clients.add(self)

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ('_local', '_all', '_all_lock', '_ssl_context'):
            del state[name]  # made again in the process that unpickles
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._ssl_context = None
        self._local = threading.local()
        self._all = []
        self._all_lock = threading.Lock()
        _clients.add(self)

    @property
    def _connections(self) -> Dict[tuple, http.client.HTTPConnection]:
        """This thread's connections in this process: a forked child never uses (or closes) its parent's sockets,
        and two threads never share one."""
        local = self._local
        pid = os.getpid()
        if getattr(local, 'pid', None) != pid:
            local.pid = pid
            local.connections = {}
            with self._all_lock:
                self._all.append((pid, local.connections))
        return local.connections

    def _connection(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        conn = self._connections.get((scheme, netloc))
        if conn is None:
            if scheme == 'https':
                if self._ssl_context is None:
                    self._ssl_context = ssl.create_default_context(cafile=self.cafile)
                conn = http.client.HTTPSConnection(netloc, timeout=self.timeout, context=self._ssl_context)
            else:
                conn = http.client.HTTPConnection(netloc, timeout=self.timeout)
            self._connections[(scheme, netloc)] = conn
            self.connections_made += 1
        return conn

    def _drop(self, scheme: str, netloc: str):
        conn = self._connections.pop((scheme, netloc), None)
        if conn is not None:
            conn.close()

    def exchange(self, url: str, headers: Dict[str, str], plan):
        """GET ``url``; ``plan(response)`` returns the body length to read, or raises (a _Transient to retry).
        Returns (response, body)."""
        u = urlsplit(url)
        scheme = u.scheme.lower()
        target = (u.path or '/') + ('?' + u.query if u.query else '')
        name = redact_location(url)
        netloc = u.netloc
        if '@' in netloc:  # user:password in the URL: HTTP Basic, as browsers and Node send it
            userinfo, _, netloc = netloc.rpartition('@')
            if not any(k.lower() == 'authorization' for k in {**self.headers, **headers}):
                user, _, password = userinfo.partition(':')
                token = base64.b64encode(f'{unquote(user)}:{unquote(password)}'.encode()).decode()
                headers = {**headers, 'Authorization': f'Basic {token}'}
        attempt = 0
        while True:
            reused = (scheme, netloc) in self._connections
            try:
                conn = self._connection(scheme, netloc)
                try:
                    self.requests += 1
                    conn.request('GET', target, headers={**self.headers, 'Accept-Encoding': 'identity', **headers})
                    res = conn.getresponse()
                    try:
                        want = plan(res)
                    except BaseException:
                        self._drop(scheme, netloc)  # cheaper than draining an unwanted body
                        raise
                    body = res.read(want) if want is not None else res.read()
                    if want is not None and len(body) != want:
                        raise _Transient(f'connection closed after {len(body)} body bytes')
                    if not res.isclosed() and res.length:
                        self._drop(scheme, netloc)  # more body than planned: do not reuse the connection
                    return res, body
                except (_Transient, *_NETWORK_ERRORS):
                    self._drop(scheme, netloc)
                    raise
            except ShardkitError:
                raise
            except ssl.SSLCertVerificationError as err:  # another attempt cannot fix it
                raise ShardkitError(HTTP, f'GET {name}: the server\'s certificate is not trusted ({err.verify_message}); '
                                    'pass cafile= with the certificate (or its CA) to trust', file=name) from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as err:
                if reused:  # the server closed an idle keep-alive connection: a new one at once, not a retry
                    continue
                failure, retry_after = f'{type(err).__name__}: {err}', None
            except _Transient as err:
                failure, retry_after = str(err), err.retry_after
            except socket.timeout:
                failure, retry_after = f'no data for {self.timeout:g} s (timeout)', None
            except _NETWORK_ERRORS as err:
                failure, retry_after = f'{type(err).__name__}: {err}', None
            if attempt >= self.retries:
                raise ShardkitError(HTTP, f'GET {name} failed after {attempt + 1} attempts: {failure}', file=name)
            step = min(self.max_backoff, self.backoff * 2 ** attempt)
            delay = step / 2 + random.random() * step / 2  # "equal jitter": retries of many readers spread
            if retry_after is not None:
                delay = min(self.max_backoff, max(delay, retry_after))
            time.sleep(delay)
            attempt += 1

    def close(self):
        pid = os.getpid()
        with self._all_lock:
            mine = [c for p, c in self._all if p == pid]
            self._all = []
        for connections in mine:
            for conn in list(connections.values()):
                conn.close()
            connections.clear()


def plan_status(res, name: str):
    """A status that is not the expected success: 404/410 missing, 408/429/5xx transient, else HTTP."""
    status = res.status
    text = f'{status} {res.reason}' if res.reason else str(status)
    if status in (404, 410):
        raise ShardkitError(SHARD_MISSING, f'{name} does not exist (HTTP {text}); check the URL, or upload the '
                            'missing file', file=name)
    if status in (408, 429) or (status >= 500 and status not in (501, 505)):
        ra = (res.getheader('retry-after') or '').strip()
        raise _Transient(f'HTTP {text}', float(ra) if ra.isdigit() else None)
    hint = '; check credentials, or whether a presigned URL expired' if status in (401, 403) else ''
    raise ShardkitError(HTTP, f'{name} answered HTTP {text}{hint}', file=name)


def read_all(url: str, client: HttpClient) -> bytes:
    """A whole small file (manifest.json). Missing: SHARD_MISSING."""
    name = redact_location(url)

    def plan(res):
        if res.status == 200:
            _check_encoding(res, name)
            return None
        plan_status(res, name)

    return client.exchange(url, {}, plan)[1]


def _check_encoding(res, name):
    encoding = res.getheader('content-encoding')
    if encoding is not None and encoding.strip().lower() != 'identity':
        raise ShardkitError(HTTP, f'{name} answered with Content-Encoding {encoding}; shards must be served without '
                            'compression', file=name)


class HttpFile:
    """One file read by byte ranges. ``size`` when known (from the manifest) costs no request."""

    def __init__(self, url: str, client: HttpClient, size: Optional[int] = None, size_mismatch_code: str = HTTP):
        self.url = url
        self.name = redact_location(url)
        self.client = client
        self.known_size = size
        self.etag: Optional[str] = None
        self.size_mismatch_code = size_mismatch_code
        self.closed = False

    def size(self) -> int:
        if self.known_size is None:
            self._fetch_size()
        return self.known_size

    def read(self, offset: int, length: int) -> bytes:
        if self.closed:
            raise ShardkitError(CLOSED, f'{self.name} was closed; open it again to read', file=self.name)
        if length == 0:
            return b''
        return self.client.exchange(self.url, {'Range': f'bytes={offset}-{offset + length - 1}'},
                                    lambda res: self._plan_range(res, offset, length))[1]

    def _plan_range(self, res, offset, length):
        status = res.status
        if status == 206:
            header = res.getheader('content-range')
            rng = _parse_content_range(header)
            if rng is None:
                raise self._http_error(f'answered 206 without a valid Content-Range ({header})')
            first, last, total = rng
            if total is not None:
                # every reply says how large the file is now: a file replaced under the index must not pass for it
                if self.known_size is not None and total != self.known_size:
                    raise self._resized(offset, length, total)
                self.known_size = total
            self._check_etag(res, offset)
            _check_encoding(res, self.name)
            wanted_last = offset + length - 1
            declared = res.getheader('content-length')
            if declared is not None and declared.strip().isdigit() and int(declared) > length:
                raise self._http_error(f'announced {int(declared)} bytes for a range of {length}')
            if first == offset and last == wanted_last:
                return length
            if first == offset and last < wanted_last and total == last + 1:
                raise self._truncated(offset, length, total)
            raise self._http_error(f'answered bytes {first}-{last} to a request for bytes {offset}-{wanted_last}')
        if status == 416:
            m = _UNSATISFIED_RANGE.fullmatch((res.getheader('content-range') or '').strip())
            total = int(m.group(1)) if m else None
            if total is not None and offset + length <= total:
                raise self._http_error(f'answered 416 to bytes {offset}-{offset + length - 1} of a file it says has '
                                       f'{total} bytes')
            raise self._truncated(offset, length, total)
        if status == 200 and res.getheader('content-length') == '0':
            raise self._truncated(offset, length, 0)  # nginx answers an empty file's Range requests with 200
        if status == 200:
            raise self._http_error('answered 200 with the whole file to a Range request: the server ignores Range; '
                                   'serve the dataset from a server with byte-range support (nginx, S3, GCS, most CDNs)')
        plan_status(res, self.name)

    def _fetch_size(self):
        total = [None]

        def plan(res):
            if res.status == 206:
                rng = _parse_content_range(res.getheader('content-range'))
                if rng is None or rng[2] is None:
                    raise self._http_error(f'gave no total size in Content-Range ({res.getheader("content-range")})')
                self._check_etag(res, 0)
                total[0] = rng[2]
                return 1
            if res.status == 416:
                m = _UNSATISFIED_RANGE.fullmatch((res.getheader('content-range') or '').strip())
                total[0] = int(m.group(1)) if m else 0
                return None
            if res.status == 200 and res.getheader('content-length') == '0':
                total[0] = 0
                return 0
            if res.status == 200:
                raise self._http_error('answered 200 to a Range request: the server ignores Range and cannot serve '
                                       'shards')
            plan_status(res, self.name)

        self.client.exchange(self.url, {'Range': 'bytes=0-0'}, plan)
        self.known_size = total[0]

    def _check_etag(self, res, offset):
        header = res.getheader('etag')
        if header is None:
            return
        etag = header.strip()
        if etag.startswith('W/'):
            etag = etag[2:]  # weak comparison: a CDN may weaken a strong tag
        if self.etag is None:
            self.etag = etag
        elif etag != self.etag:
            raise ShardkitError(self.size_mismatch_code, f'{self.name} changed on the server while it was being read '
                                f'(ETag {self.etag}, now {etag}): the file was replaced; open the dataset again, or '
                                'read it from a copy that does not change', file=self.name, offset=offset)

    def _resized(self, offset, length, total):
        if total < self.known_size:
            return self._truncated(offset, length, total)
        return ShardkitError(self.size_mismatch_code, f'{self.name} is now {total} bytes where {self.known_size} were '
                             'expected: the file was replaced; read it from a consistent copy of the dataset (run '
                             '`shardkit verify`)', file=self.name, offset=offset)

    def _truncated(self, offset, length, total):
        ends = 'the file is shorter' if total is None else f'the file ends at {total}'
        return ShardkitError(TRUNCATED, f'{self.name} is truncated: needed {length} bytes at offset {offset} but '
                             f'{ends}; re-upload the file or re-pack the dataset', file=self.name, offset=offset)

    def _http_error(self, what):
        return ShardkitError(HTTP, f'{self.name} {what}', file=self.name)

    def close(self):
        self.closed = True


def _parse_content_range(header):
    m = _CONTENT_RANGE.fullmatch((header or '').strip())
    if m is None:
        return None
    first, last = int(m.group(1)), int(m.group(2))
    total = None if m.group(3) == '*' else int(m.group(3))
    if last < first or (total is not None and last >= total):
        return None
    return first, last, total
