"""Fixtures: the Node side (writer and reader, from the built dist/), datasets it writes, and a real nginx."""
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

# hypothesis keeps caches (its Unicode tables) in a storage directory, by default .hypothesis/ under the current
# directory: the tests must leave no file in the tree
os.environ.setdefault('HYPOTHESIS_STORAGE_DIRECTORY', os.path.join(tempfile.gettempdir(), 'shardkit-py-hypothesis'))
from hypothesis import settings  # noqa: E402

# no .hypothesis/ example database: the tests must leave no file in the tree
settings.register_profile('shardkit', database=None, deadline=None)
settings.load_profile('shardkit')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, '..')))  # the package under test, not an installed copy

NODE = os.environ.get('SHARDKIT_NODE') or shutil.which('node')
DIST = os.path.join(ROOT, 'dist', 'src', 'read', 'dataset.js')
NGINX = os.environ.get('NGINX_BIN', '/usr/sbin/nginx')


def _need(ok: bool, why: str):
    # in CI a missing peer fails loudly; on a workstation it skips with the reason
    if not ok:
        if os.environ.get('CI'):
            pytest.fail(why)
        pytest.skip(why)


def node(command: str, request) -> object:
    """Runs tests/node_side.mjs with ``request`` as JSON on stdin; returns its JSON answer."""
    _need(NODE is not None and os.path.exists(DIST), f'node and the built dist/ are needed ({DIST}): run npm run build')
    out = subprocess.run([NODE, os.path.join(HERE, 'node_side.mjs'), command], input=json.dumps(request).encode(),
                         capture_output=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f'node_side.mjs {command} failed: {out.stderr.decode()[-2000:]}')
    return json.loads(out.stdout)


def write_dataset(directory: str, samples, **options) -> str:
    """Writes ``samples`` ([(key, {ext: bytes})]) with Node's DatasetWriter and ``options``."""
    node('write', {'dir': directory, 'options': options, 'samples': [
        {'key': k, 'members': {e: base64.b64encode(b).decode() for e, b in m.items()}} for k, m in samples]})
    return directory


def digest(sample: dict) -> dict:
    """A Python sample in node_side.mjs's digest shape."""
    return {'key': sample['__key__'],
            'members': {e: hashlib.sha256(b).hexdigest() for e, b in sample.items() if e != '__key__'}}


@pytest.fixture
def tmp_dir():
    d = tempfile.mkdtemp(prefix='shardkit-py-')
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope='session')
def session_dir():
    d = tempfile.mkdtemp(prefix='shardkit-py-session-')
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


# master_process off: one process running as the caller (no worker dropping privileges to a user who could not
# read the 0700 temp dirs), one pid to stop
NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log {prefix}/access.log;
  client_body_temp_path {prefix}/tmp; proxy_temp_path {prefix}/tmp; fastcgi_temp_path {prefix}/tmp;
  uwsgi_temp_path {prefix}/tmp; scgi_temp_path {prefix}/tmp;
  default_type application/octet-stream;
  keepalive_timeout 60s;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port};
    listen 127.0.0.1:{tls_port} ssl;
    ssl_certificate {prefix}/tls.crt;
    ssl_certificate_key {prefix}/tls.key;
    root {root};
    location /norange/ {{ alias {root}/; max_ranges 0; }}
    location /fail503/ {{ return 503; }}
    location /private/ {{
      alias {root}/;
      if ($http_authorization != "Bearer py-token") {{ return 401; }}
    }}
  }}
}}
"""


class Nginx:
    def __init__(self, root: str):
        self.root = root
        self.prefix = tempfile.mkdtemp(prefix='shardkit-py-nginx-')
        os.mkdir(os.path.join(self.prefix, 'tmp'))
        self.port = _free_port()
        self.tls_port = _free_port()
        # a fresh self-signed certificate for 127.0.0.1, the CA https tests trust
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f'{self.prefix}/tls.key',
                        '-out', f'{self.prefix}/tls.crt', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext',
                        'subjectAltName=IP:127.0.0.1'], check=True, capture_output=True, timeout=60)
        self.ca = f'{self.prefix}/tls.crt'
        conf = os.path.join(self.prefix, 'nginx.conf')
        with open(conf, 'w') as f:
            f.write(NGINX_CONF.format(prefix=self.prefix, port=self.port, tls_port=self.tls_port, root=root))
        self.proc = subprocess.Popen([NGINX, '-p', self.prefix + '/', '-c', conf, '-e', self.prefix + '/error.log'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 10
        while True:
            try:
                for port in (self.port, self.tls_port):
                    socket.create_connection(('127.0.0.1', port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError(f'nginx did not start: {self.proc.stderr.read().decode()}')
                time.sleep(0.05)
        self.url = f'http://127.0.0.1:{self.port}'
        self.https_url = f'https://127.0.0.1:{self.tls_port}'

    def access_log(self):
        with open(os.path.join(self.prefix, 'access.log')) as f:
            return f.read().splitlines()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stderr.close()
        shutil.rmtree(self.prefix, ignore_errors=True)


@pytest.fixture(scope='session')
def nginx(session_dir):
    """A real nginx on loopback serving ``<session_dir>/www`` (/ with ranges, /norange/, /fail503/, /private/), over
    http and over https with a self-signed certificate (``nginx.ca``)."""
    _need(os.path.exists(NGINX), f'nginx not found at {NGINX} (apt-get install nginx)')
    root = os.path.join(session_dir, 'www')
    os.makedirs(root, exist_ok=True)
    server = Nginx(root)
    yield server
    server.stop()
