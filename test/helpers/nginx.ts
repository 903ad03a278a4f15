import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A real nginx on 127.0.0.1 for HTTP source tests: a non-daemon child in its own process group, with its own
 * prefix, config, pid, temp and log files in a temp dir, serving one root directory.
 *
 * Locations (all serve `root`):
 * - `/`            static files, byte ranges on (nginx's default);
 * - `/norange/`    the same files with `max_ranges 0`: nginx ignores Range and answers 200 with the whole file;
 * - `/fail503/`    always 503;  `/missing/` always 404;  `/forbidden/` always 403;
 * - `/signed/`     the same files, each behind a signature of its own path (nginx's secure_link): a request needs
 *                  `?expires=T&sig=S` made by {@link signNginxUrl}, else 403, as an object store's presigned URLs;
 * - `/private/`    the same files for requests with `Authorization: Bearer ${NGINX_TOKEN}`, else 401.
 * The access log records `$connection $connection_requests $status $request_method $request_uri $http_range`, so
 * tests can count TCP connections (keep-alive reuse) and requests exactly.
 */

export const NGINX_BIN = process.env.NGINX_BIN ?? '/usr/sbin/nginx';

/** A request {@link NginxServer.accessLog} makes (and leaves out) so that the log holds every answered request. */
const BARRIER = '/__log_barrier__';

/**
 * nginx writes a request's log line just after the last byte of its response, so a client can see the response
 * before the line is written. nginx runs one worker that handles one event at a time: once it has answered a new
 * request, every response sent before has been logged.
 */
function logBarrier(port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: BARRIER, agent: false, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', resolve);
      })
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy(new Error(`nginx did not answer ${BARRIER} within 10 s`));
      })
      .on('error', reject);
  });
}

/** The bearer token `/private/` wants. */
export const NGINX_TOKEN = 'shardkit-test-token';

/** The secret `/signed/` checks signatures with. */
const SIGN_SECRET = 'shardkit-test-secret';

/**
 * `url` (under `/signed/`) made valid until `expires` (Unix seconds) for that one path: nginx's secure_link_md5
 * over "$expires$uri secret", base64url, as the config below checks it.
 */
export function signNginxUrl(url: string, expires: number): string {
  const u = new URL(url);
  const sig = createHash('md5').update(`${expires}${decodeURIComponent(u.pathname)} ${SIGN_SECRET}`).digest('base64url');
  u.searchParams.set('expires', String(expires));
  u.searchParams.set('sig', sig);
  return u.toString();
}

/**
 * Why the nginx tests are skipped, or undefined when they run. Missing nginx skips locally (install the Debian
 * package `nginx`); in CI (process.env.CI set) it never skips, so a missing nginx fails loudly in startNginx.
 */
export const nginxSkipReason: string | undefined =
  fs.existsSync(NGINX_BIN) || process.env.CI
    ? undefined
    : `nginx not found at ${NGINX_BIN} (apt-get install nginx, or set NGINX_BIN)`;

export interface AccessLogEntry {
  connection: number;
  connectionRequests: number;
  status: number;
  method: string;
  uri: string;
  /** The Range header, or '-' when none was sent. */
  range: string;
}

export interface NginxServer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  url: string;
  port: number;
  /** `https://127.0.0.1:PORT` when started with `tls: true`. */
  httpsUrl?: string;
  /** The PEM certificate that httpsUrl presents, to trust as a CA. */
  ca?: string;
  /** Parsed access log lines of every request answered so far (see logBarrier). */
  accessLog(): Promise<AccessLogEntry[]>;
  /** Stops nginx (SIGTERM to its process group, SIGKILL after 3 s) and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

const SETPRIV_BIN = '/usr/bin/setpriv';
const START_ATTEMPTS = 5;
const READY_TIMEOUT_MS = 5_000;

export interface NginxOptions {
  /** Also listen with TLS on a second port, with a fresh self-signed certificate for 127.0.0.1 (needs openssl). */
  tls?: boolean;
}

export async function startNginx(root: string, options: NginxOptions = {}): Promise<NginxServer> {
  if (!fs.existsSync(NGINX_BIN)) {
    throw new Error(`nginx not found at ${NGINX_BIN}: install the Debian package nginx (required when CI is set)`);
  }
  let lastError: unknown;
  // The free port is found by binding port 0 and letting go; another process may grab it first, so retry.
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
    const port = await freePort();
    const tlsPort = options.tls === true ? await freePort() : undefined;
    const prefix = await fsp.mkdtemp(path.join(os.tmpdir(), 'shardkit-nginx-'));
    try {
      return await startOnPort(path.resolve(root), prefix, port, tlsPort);
    } catch (err) {
      lastError = err;
      await fsp.rm(prefix, { recursive: true, force: true });
    }
  }
  throw new Error(`nginx did not start after ${START_ATTEMPTS} attempts: ${String(lastError)}`);
}

async function startOnPort(
  root: string,
  prefix: string,
  port: number,
  tlsPort: number | undefined,
): Promise<NginxServer> {
  const conf = path.join(prefix, 'nginx.conf');
  const accessLogPath = path.join(prefix, 'access.log');
  const errorLogPath = path.join(prefix, 'error.log');
  let ca: string | undefined;
  if (tlsPort !== undefined) ca = selfSignedCertificate(prefix);
  await fsp.writeFile(conf, nginxConf(root, prefix, port, tlsPort, accessLogPath, errorLogPath));
  const nginxArgs = [NGINX_BIN, '-p', `${prefix}/`, '-c', conf, '-e', errorLogPath];
  // setpriv --pdeathsig: the kernel kills nginx if this process dies without calling stop() (e.g. SIGKILL of a
  // vitest worker), which no exit handler can catch.
  const [command, ...args] = fs.existsSync(SETPRIV_BIN)
    ? [SETPRIV_BIN, '--pdeathsig', 'KILL', '--', ...nginxArgs]
    : nginxArgs;
  const child = spawn(command ?? NGINX_BIN, args, {
    detached: true, // own process group: stop() signals the group, so nothing is orphaned
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const killOnExit = (): void => killGroup(child, 'SIGKILL');
  process.once('exit', killOnExit);

  const ports = tlsPort === undefined ? [port] : [port, tlsPort];
  const listening = Promise.all(ports.map((p) => waitForPort(p, READY_TIMEOUT_MS)));
  const ready = await Promise.race([listening.then(() => true), exited.then(() => false)]);
  if (!ready) {
    process.removeListener('exit', killOnExit);
    const log = await fsp.readFile(errorLogPath, 'utf8').catch(() => '');
    throw new Error(`nginx exited on port ${port}: ${stderr}${log}`.trim());
  }

  let stopped: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    ...(tlsPort === undefined || ca === undefined ? {} : { httpsUrl: `https://127.0.0.1:${tlsPort}`, ca }),
    accessLog: async () => {
      await logBarrier(port);
      return parseAccessLog(await fsp.readFile(accessLogPath, 'utf8').catch(() => '')).filter((e) => e.uri !== BARRIER);
    },
    stop: () => {
      stopped ??= (async () => {
        killGroup(child, 'SIGTERM');
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 3_000);
        if (child.exitCode === null && child.signalCode === null) await exited;
        clearTimeout(timer);
        process.removeListener('exit', killOnExit);
        await fsp.rm(prefix, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

function selfSignedCertificate(prefix: string): string {
  const key = path.join(prefix, 'tls.key');
  const cert = path.join(prefix, 'tls.crt');
  const result = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2']
      .concat(['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  if (result.status !== 0) throw new Error(`openssl could not make a test certificate: ${String(result.stderr)}`);
  return fs.readFileSync(cert, 'utf8');
}

function nginxConf(
  root: string,
  prefix: string,
  port: number,
  tlsPort: number | undefined,
  accessLog: string,
  errorLog: string,
): string {
  const tls =
    tlsPort === undefined
      ? ''
      : `listen 127.0.0.1:${tlsPort} ssl;
    ssl_certificate ${prefix}/tls.crt;
    ssl_certificate_key ${prefix}/tls.key;`;
  // master_process off: one process running as the caller, so no worker drops privileges to a user who could
  // not read the (0700) temp dirs, and there is exactly one pid to stop.
  return `daemon off;
master_process off;
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${errorLog} warn;
events { worker_connections 512; }
http {
  default_type application/octet-stream;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  log_format shardkit '$connection $connection_requests $status $request_method $request_uri "$http_range"';
  access_log ${accessLog} shardkit;
  sendfile on;
  keepalive_timeout 60s;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:${port};
    ${tls}
    root ${root};
    location / { }
    location /norange/ { alias ${root}/; max_ranges 0; }
    location /fail503/ { return 503; }
    location /missing/ { return 404; }
    location /forbidden/ { return 403; }
    location = ${BARRIER} { return 204; }
    location /private/ {
      alias ${root}/;
      if ($http_authorization != "Bearer ${NGINX_TOKEN}") { return 401; }
    }
    location /signed/ {
      alias ${root}/;
      secure_link $arg_sig,$arg_expires;
      secure_link_md5 "$secure_link_expires$uri ${SIGN_SECRET}";
      if ($secure_link = "") { return 403; }
      if ($secure_link = "0") { return 403; }
    }
  }
}
`;
}

function parseAccessLog(text: string): AccessLogEntry[] {
  const entries: AccessLogEntry[] = [];
  for (const line of text.split('\n')) {
    const match = /^(\d+) (\d+) (\d+) (\S+) (\S+) "(.*)"$/.exec(line);
    if (match === null) continue;
    entries.push({
      connection: Number(match[1]),
      connectionRequests: Number(match[2]),
      status: Number(match[3]),
      method: match[4] ?? '',
      uri: match[5] ?? '',
      range: match[6] ?? '',
    });
  }
  return entries;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listening on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
