import fsp from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';

/**
 * A small real HTTP server on 127.0.0.1 that misbehaves on cue, for the retry and timeout tests nginx cannot
 * script ("fail the first K requests, then serve"). It serves files from `root` with single byte ranges
 * (`Range: bytes=a-b`), like nginx does.
 *
 * Each request takes the next fault from `faults` until they run out, then is served normally:
 * - `'503'`       answer 503 Service Unavailable;
 * - `'reset'`     destroy the socket without answering (the client sees ECONNRESET / socket hang up);
 * - `'hang'`      never answer (the client's timeout must fire);
 * - `'shortBody'` send the right headers and half the body, then close the connection;
 * - `'stallBody'` send the right headers and half the body, then stay silent;
 * - `'empty200'`  answer 200 with no body (what nginx answers to a Range request on an empty file);
 * - `'416'`       answer 416 with `Content-Range: bytes *\/8192` (as if the file had 8192 bytes);
 * - `'ok'`        serve normally (to let the first requests through, e.g. a dataset's open, and fault later ones).
 * - `'trickle'`   send the right headers, then 64 bytes of the body every 50 ms (never idle long, never done soon).
 */
export type Fault = '503' | 'reset' | 'hang' | 'shortBody' | 'stallBody' | 'empty200' | '416' | 'ok' | 'trickle';

export interface FlakyServer {
  url: string;
  /** Requests received, faulty ones included. */
  readonly requests: number;
  /** Distinct TCP connections that sent a request. */
  readonly connections: number;
  /** The most requests received and not yet answered at one time. */
  readonly peakInFlight: number;
  stop(): Promise<void>;
}

/** `delayMs`: each request is answered that long after it arrived (so requests in flight overlap and can be counted). */
export async function startFlakyServer(root: string, faults: readonly Fault[], options: { delayMs?: number } = {}): Promise<FlakyServer> {
  const queue = [...faults];
  let requests = 0;
  let inFlight = 0;
  let peakInFlight = 0;
  const sockets = new Set<object>();
  const server = http.createServer((req, res) => {
    requests++;
    sockets.add(req.socket);
    inFlight++;
    peakInFlight = Math.max(peakInFlight, inFlight);
    res.on('close', () => inFlight--);
    const fault = queue.shift();
    if (options.delayMs !== undefined) setTimeout(() => answer(req, res, fault), options.delayMs);
    else answer(req, res, fault);
  });
  const answer = (req: http.IncomingMessage, res: http.ServerResponse, fault: Fault | undefined): void => {
    if (fault === '503') {
      res.writeHead(503, { 'content-length': '0' }).end();
      return;
    }
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault === 'hang') return;
    if (fault === 'empty200') {
      res.writeHead(200, { 'content-length': '0' }).end();
      return;
    }
    if (fault === '416') {
      res.writeHead(416, { 'content-range': 'bytes */8192', 'content-length': '0' }).end();
      return;
    }
    serveFile(root, req, res, fault === 'ok' ? undefined : fault).catch(() => res.destroy());
  };
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get connections() {
      return sockets.size;
    },
    get peakInFlight() {
      return peakInFlight;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serveFile(
  root: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  fault: 'shortBody' | 'stallBody' | 'trickle' | undefined,
): Promise<void> {
  const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  const file = path.join(root, path.normalize(pathname));
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(file);
  } catch {
    res.writeHead(404, { 'content-length': '0' }).end();
    return;
  }
  let status = 200;
  let body = bytes;
  const headers: Record<string, string> = { 'accept-ranges': 'bytes' };
  const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  if (range !== null) {
    const first = Number(range[1]);
    const last = Math.min(Number(range[2]), bytes.length - 1);
    if (first >= bytes.length) {
      res.writeHead(416, { 'content-range': `bytes */${bytes.length}`, 'content-length': '0' }).end();
      return;
    }
    status = 206;
    body = bytes.subarray(first, last + 1);
    headers['content-range'] = `bytes ${first}-${last}/${bytes.length}`;
  }
  headers['content-length'] = String(body.length);
  res.writeHead(status, headers);
  if (fault === undefined) {
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  if (fault === 'trickle') {
    let sent = 0;
    const timer = setInterval(() => {
      if (res.destroyed || sent >= body.length) {
        clearInterval(timer);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(body.subarray(sent, sent + 64));
      sent += 64;
    }, 50);
    res.on('close', () => clearInterval(timer));
    return;
  }
  res.write(body.subarray(0, Math.floor(body.length / 2)));
  if (fault === 'shortBody') setTimeout(() => res.destroy(), 10);
}
