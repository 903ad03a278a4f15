import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { IoStats } from '../../src/io/io-stats.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import type { Loader } from '../../src/read/loader.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { loaderSample, sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { CLI, shardkit } from '../helpers/cli.js';
import { NGINX_TOKEN, nginxSkipReason, signNginxUrl, startNginx, type AccessLogEntry, type NginxServer } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 2000;
let root: string;
let server: NginxServer;
let local: Dataset;

/**
 * A signer that, once `hold` is set, keeps the next request waiting (`waiting` resolves then) until `release()`:
 * a way to close a loader or dataset while one of its requests is surely in flight.
 */
function signerGate(): { sign: (url: string) => Promise<string>; hold: boolean; waiting: Promise<void>; release: () => void; signed: number } {
  let held: () => void = () => undefined;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = {
    hold: false,
    signed: 0,
    waiting: new Promise<void>((resolve) => (held = resolve)),
    release: () => release(),
    sign: async (url: string): Promise<string> => {
      if (state.hold) {
        held();
        await gate;
      }
      state.signed++;
      return url;
    },
  };
  return state;
}

async function collect<S>(loader: Loader<S>): Promise<S[]> {
  const out: S[] = [];
  for await (const batch of loader) out.push(...batch);
  return out;
}

function requestsFor(log: AccessLogEntry[], file: string): AccessLogEntry[] {
  return log.filter((e) => e.uri.endsWith(`/${file}`));
}

describe.skipIf(nginxSkipReason !== undefined)('datasets over http (real nginx on 127.0.0.1)', () => {
  beforeAll(async () => {
    root = tmpDir();
    // Small index pages so the index spans many pages and "never downloaded whole" means something.
    await writeLoaderDataset(path.join(root, 'ds'), N, { shardBytes: 256 * 1024, pageSize: 1024 });
    fs.cpSync(path.join(root, 'ds'), path.join(root, 'gone'), { recursive: true });
    fs.rmSync(path.join(root, 'gone', 'shard-000002.tar'));
    // a shard replaced by a longer file (same first bytes, so the fingerprint matches)
    fs.cpSync(path.join(root, 'ds'), path.join(root, 'resized'), { recursive: true });
    fs.appendFileSync(path.join(root, 'resized', 'shard-000001.tar'), Buffer.alloc(512));
    // tiny samples: a batch's real read (tar headers, coalesced holes) is far above its estimate from stored bytes
    const tiny = new DatasetWriter({ dir: path.join(root, 'tiny'), shardBytes: 256 * 1024 });
    for (let i = 0; i < 4000; i++) tiny.add({ key: `t/${String(i).padStart(6, '0')}`, members: { txt: new TextEncoder().encode(`s${i}`) } });
    await tiny.finish();
    server = await startNginx(root);
    local = await openDataset(path.join(root, 'ds'));
  });
  afterAll(async () => {
    await local?.close();
    await server?.stop();
  });

  it('opens with three requests and never downloads the whole index', async () => {
    const io = new IoStats();
    const before = (await server.accessLog()).length;
    const ds = await openDataset(`${server.url}/ds`, { ioStats: io });
    const log = (await server.accessLog()).slice(before);
    expect(log.map((e) => e.uri)).toEqual([`/ds/manifest.json`, `/ds/${ds.manifest.index.file}`, `/ds/${ds.manifest.index.file}`]);
    expect(io.httpRequests).toBe(3);
    // Look up one key: a handful of page-sized ranges, far from the whole index.
    await ds.get(loaderSample(1234).key);
    const indexRanges = requestsFor((await server.accessLog()).slice(before), ds.manifest.index.file).map((e) => e.range);
    const indexBytesFetched = indexRanges.reduce((n, r) => {
      const m = /bytes=(\d+)-(\d+)/.exec(r);
      return n + (m === null ? Infinity : Number(m[2]) - Number(m[1]) + 1);
    }, 0);
    expect(indexBytesFetched).toBeLessThan(ds.manifest.index.bytes / 4);
    await ds.close();
  });

  it('get, at, keys and a loader epoch equal the local dataset byte for byte', async () => {
    const ds = await openDataset(`${server.url}/ds`);
    expect(ds.size).toBe(N);
    for (const i of [0, 17, 999, N - 1]) {
      const [remote, here] = [await ds.at(i), local.atSync(i)];
      expect(remote.key).toBe(here.key);
      expect(sameBytes(remote.members.bin, here.members.bin)).toBe(true);
      expect(sameBytes((await ds.get(here.key)).members.cls, here.members.cls)).toBe(true);
    }
    const keys: string[] = [];
    for await (const k of ds.keys({ start: 's/000100', limit: 50 })) keys.push(k);
    expect(keys).toEqual(Array.from({ length: 50 }, (_, i) => loaderSample(100 + i).key));
    const options = { batchSize: 32, shuffle: 'block' as const, seed: 8, windowShards: 2 };
    const [remoteEpoch, localEpoch] = [await collect(ds.loader(options)), await collect(local.loader(options))];
    expect(remoteEpoch.map((s) => s.key)).toEqual(localEpoch.map((s) => s.key));
    remoteEpoch.forEach((s, i) => expect(sameBytes(s.members.bin, localEpoch[i]?.members.bin)).toBe(true));
    await ds.close();
  });

  it('an epoch costs about one request per coalesced read, plus index pages once', async () => {
    const io = new IoStats();
    const ds = await openDataset(`${server.url}/ds`, { ioStats: io, checkShards: 'size' });
    const start = (await server.accessLog()).length;
    const loader = ds.loader({ batchSize: 64, shuffle: 'full', seed: 2, concurrency: 8 });
    expect((await collect(loader)).length).toBe(N);
    const log = (await server.accessLog()).slice(start);
    const shardRequests = log.filter((e) => /shard-\d+\.tar$/.test(e.uri));
    const indexRequests = requestsFor(log, ds.manifest.index.file);
    expect(shardRequests.length).toBe(loader.stats().reads);
    expect(loader.stats().reads).toBeLessThanOrEqual(N);
    expect(shardRequests.every((e) => e.status === 206)).toBe(true);
    // Every index page at most once: the lookups of a batch run in position order, batches one after another.
    expect(new Set(indexRequests.map((e) => e.range)).size).toBe(indexRequests.length);
    expect(io.httpRequests).toBe(log.length + 3); // + the three requests of openDataset
    // Keep-alive: a few connections, not one per request.
    expect(new Set(log.map((e) => e.connection)).size).toBeLessThanOrEqual(16);
    await ds.close();
  });

  it('a server that ignores Range fails with a clear HTTP error', async () => {
    const err = await openDataset(`${server.url}/norange/ds`).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.HTTP, message: expect.stringContaining('ignores Range') });
  });

  it('read-ahead stays within prefetch plus the batch being read, whatever the estimate said', async () => {
    const ds = await openDataset(`${server.url}/tiny`);
    const prefetch = 64 * 1024;
    const loader = ds.loader({ batchSize: 32, shuffle: 'full', seed: 1, prefetch });
    let consumed = 0;
    for await (const batch of loader) {
      expect(batch.length).toBe(32);
      await new Promise((resolve) => setTimeout(resolve, 20)); // a training step: idle time for read-ahead
      if (++consumed === 10) break;
    }
    const stats = loader.stats();
    // before: 125 batches fetched for 10 consumed, 41 MB in flight. Each batch's read once was larger than the whole
    // prefetch bound (holes of coalesced reads); now it is its spans, and the bytes ahead stay within the bound plus
    // the batch being read.
    expect(stats.peakPrefetchedBytes).toBeLessThanOrEqual(prefetch + 32 * 1024);
    expect(stats.bytesRead).toBeLessThanOrEqual(prefetch + 32 * 1024);
    await ds.close();
  });

  it('a loader closed while a batch is being fetched ends that next() with done, not an error', async () => {
    const gate = signerGate();
    const ds = await openDataset(`${server.url}/ds`, { http: { sign: gate.sign } });
    const loader = ds.loader({ batchSize: 50, shuffle: 'full', seed: 2 });
    gate.hold = true;
    const next = loader.next();
    await gate.waiting; // the loader's first request is held in the signer
    await loader.return();
    gate.release();
    await expect(next).resolves.toEqual({ done: true, value: undefined });
    await expect(loader.next()).resolves.toEqual({ done: true, value: undefined });
    await ds.close();
  });

  it('a shard replaced by a file of another size fails with SHARD_MISMATCH, with verify off too', async () => {
    for (const verify of [false, true]) {
      const ds = await openDataset(`${server.url}/resized`, { verify });
      const err = await collect(ds.loader({ batchSize: 100, verify })).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: ErrorCodes.SHARD_MISMATCH, message: expect.stringContaining('shard-000001.tar is now') });
      await ds.close();
    }
  });

  it('a dataset closed while a read waits sends no request after: the read fails with CLOSED', async () => {
    const gate = signerGate();
    const ds = await openDataset(`${server.url}/ds`, { http: { sign: gate.sign, backoffMs: 1 } });
    await ds.at(30); // index pages cached, shard open: the next read is one range request
    gate.hold = true;
    const read = ds.at(31).catch((e: unknown) => e);
    await gate.waiting; // that request is held in the signer
    await ds.close();
    const signedBefore = gate.signed;
    gate.release();
    expect(await read).toMatchObject({ code: ErrorCodes.CLOSED });
    // (before: the request went out on a new connection after close, and the read returned a sample)
    expect(gate.signed).toBe(signedBefore + 1);
  });

  it('a missing shard fails the loader with SHARD_MISSING naming it', async () => {
    const ds = await openDataset(`${server.url}/gone`);
    const err = await collect(ds.loader({ batchSize: 50 })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.SHARD_MISSING, message: expect.stringContaining('shard-000002.tar') });
    await ds.close();
  });

  it('verify over http lists a missing shard as a problem, as it does for a local dataset', async () => {
    const remote = await verifyDataset(`${server.url}/gone`);
    const here = await verifyDataset(path.join(root, 'gone'));
    expect(remote.ok).toBe(false);
    expect(remote.problems).toEqual(here.problems);
    expect(remote.problems).toEqual([{ file: 'shard-000002.tar', what: expect.stringContaining('missing') }]);
  });

  it('reads through presigned URLs: http.sign signs every request, each file for its own path', async () => {
    const base = `${server.url}/signed/ds`;
    const expires = Math.floor(Date.now() / 1000) + 3600;
    const before = (await server.accessLog()).length;
    // one signature for the dataset URL cannot serve its files, as with an object store's presigned URLs
    const shared = await openDataset(signNginxUrl(base, expires)).catch((e: unknown) => e);
    expect(shared).toMatchObject({ code: ErrorCodes.HTTP, message: expect.stringContaining('presigned URL expired') });
    expect((shared as Error).message).not.toContain('sig=');
    const asked: string[] = [];
    const sign = async (url: string): Promise<string> => {
      asked.push(url);
      return signNginxUrl(url, expires);
    };
    const ds = await openDataset(base, { http: { sign } });
    const epoch = await collect(ds.loader({ batchSize: 64, shuffle: 'full', seed: 3 }));
    expect(epoch.length).toBe(N);
    for (const s of epoch) expect(sameBytes(s.members.bin, local.getSync(s.key).members.bin)).toBe(true);
    expect(sameBytes((await ds.get(loaderSample(77).key)).members.cls, loaderSample(77).members.cls)).toBe(true);
    const report = await verifyDataset(base, { http: { sign } });
    expect(report.ok, JSON.stringify(report.problems)).toBe(true);
    await ds.close();
    // (a request an earlier test gave up on may be logged late: only this dataset's requests)
    const log = (await server.accessLog()).slice(before).filter((e) => e.uri.startsWith('/signed/ds/'));
    // the shared signature's one refusal; every other request signed (none refused), and signed once: the signer
    // saw each request's unsigned URL
    expect(log.filter((e) => e.status !== 200 && e.status !== 206).map((e) => [e.status, e.uri.split('?')[0]])).toEqual([[403, '/signed/ds/manifest.json']]);
    expect(asked.length).toBe(log.length - 1);
    expect(new Set(asked.map((u) => new URL(u).search))).toEqual(new Set(['']));
    // verify also reads the files the manifest lists (shardindex.json, checked against the manifest)
    expect(new Set(log.map((e) => e.uri.split('?')[0]))).toEqual(new Set(['/signed/ds/manifest.json', `/signed/ds/${ds.manifest.index.file}`, ...ds.manifest.shards.map((s) => `/signed/ds/${s.file}`), ...ds.manifest.files.map((f) => `/signed/ds/${f}`)]));
  });

  it('a signer that fails or returns no URL fails the read with a clear error', async () => {
    const failing = await openDataset(`${server.url}/signed/ds`, { http: { sign: () => Promise.reject(new Error('no credentials')) } }).catch((e: unknown) => e);
    expect(failing).toMatchObject({ code: ErrorCodes.HTTP, message: `signing ${server.url}/signed/ds/manifest.json failed: no credentials` });
    // what the signer returned is never quoted: it may carry a signature
    for (const bad of ['shard.tar', ' https://h/x?sig=SECRET', 's3://b/k?X-Amz-Signature=SECRET']) {
      const notUrl = await openDataset(`${server.url}/signed/ds`, { http: { sign: () => bad } }).catch((e: unknown) => e);
      expect(notUrl).toMatchObject({ code: ErrorCodes.INVALID_ARG, message: `Expected sign to return an http(s) URL for ${server.url}/signed/ds/manifest.json but received a string that is not an http(s) URL` });
    }
    const hanging = await openDataset(`${server.url}/signed/ds`, { http: { sign: () => new Promise<string>(() => undefined), timeoutMs: 50 } }).catch((e: unknown) => e);
    expect(hanging).toMatchObject({ code: ErrorCodes.HTTP, message: `signing ${server.url}/signed/ds/manifest.json failed: no answer within 50 ms (timeoutMs)` });
  });

  it('info names a dataset URL without its user:password or query (a presigned signature), in text and JSON', () => {
    const url = `${server.url.replace('://', '://alice:S3CRETpw@')}/ds?X-Amz-Signature=T0KEN`;
    for (const args of [['info', url], ['info', url, '--json']]) {
      const r = shardkit(args);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(`${server.url}/ds?...`);
      expect(r.stdout + r.stderr).not.toMatch(/S3CRETpw|T0KEN|alice/);
    }
  });

  it('the CLI reads a dataset behind a bearer token with --header, or --header @FILE', async () => {
    const url = `${server.url}/private/ds`;
    const refused = shardkit(['info', url]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^shardkit: SHARDKIT_ERR_HTTP: .*401.*check credentials[^\n]*\n$/);
    const info = shardkit(['info', url, '--json', '--header', `Authorization: Bearer ${NGINX_TOKEN}`]);
    expect(info.status, info.stderr).toBe(0);
    expect((JSON.parse(info.stdout) as { samples: number }).samples).toBe(N);
    // a file keeps the token out of the process list
    const file = path.join(tmpDir(), 'headers');
    fs.writeFileSync(file, `# for the private dataset\n\nAuthorization: Bearer ${NGINX_TOKEN}\r\nX-Trace: cli-test\n`);
    const ls = shardkit(['ls', url, '--limit', '3', '-H', `@${file}`]);
    expect(ls.stdout.split('\n').filter(Boolean), ls.stderr).toEqual([0, 1, 2].map((i) => loaderSample(i).key));
    const got = spawnSync(process.execPath, [CLI, 'get', url, loaderSample(5).key, '--ext', 'bin', '--header', `@${file}`]);
    expect(got.status, got.stderr.toString()).toBe(0);
    expect(sameBytes(new Uint8Array(got.stdout), loaderSample(5).members.bin)).toBe(true);
    const verify = shardkit(['verify', url, '--quick', '--header', `@${file}`]);
    expect(verify.status, verify.stderr).toBe(0);
    const out = path.join(tmpDir(), 'x');
    const extract = shardkit(['extract', url, out, '--prefix', loaderSample(5).key, '-H', `Authorization: Bearer ${NGINX_TOKEN}`]);
    expect(extract.status, extract.stderr).toBe(0);
    expect(sameBytes(new Uint8Array(fs.readFileSync(path.join(out, `${loaderSample(5).key}.bin`))), loaderSample(5).members.bin)).toBe(true);
    const identity = path.join(tmpDir(), 'identity.mjs');
    fs.writeFileSync(identity, 'export default (s) => s;\n');
    const derived = path.join(tmpDir(), 'derived');
    const d = shardkit(['derive', url, '--out', derived, '--pass-module', identity, '--quiet', '--header', `@${file}`]);
    expect(d.status, d.stderr).toBe(0);
    const again = await openDataset(derived);
    expect(again.size).toBe(N);
    expect(sameBytes(again.getSync(loaderSample(9).key).members.bin, loaderSample(9).members.bin)).toBe(true);
    await again.close();
    // bad headers are usage errors that never echo a value
    for (const bad of [['--header', 'Authorization Bearer secret-value'], ['--header', 'X-A: secret-value\r\nX-B: b'], ['--header', '@/no/such/headers-file']]) {
      const r = shardkit(['info', url, ...bad]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: /);
      expect(r.stderr).not.toContain('secret-value');
    }
  });

  it('retries 503s and resets, then reads the same bytes', async () => {
    const flaky = await startFlakyServer(root, ['503', '503', 'reset']);
    try {
      const io = new IoStats();
      // a signer is asked again for each retry (a presigned URL may have expired meanwhile)
      let signed = 0;
      const sign = (url: string): string => `${url}?attempt=${++signed}`;
      const ds = await openDataset(`${flaky.url}/ds`, { ioStats: io, http: { backoffMs: 5, sign } });
      const epoch = await collect(ds.loader({ batchSize: 100, shuffle: 'full', seed: 1 }));
      expect(epoch.length).toBe(N);
      for (const s of epoch as Sample[]) expect(sameBytes(s.members.bin, loaderSample(Number(s.key.slice(2))).members.bin)).toBe(true);
      expect(io.retries).toBe(3);
      expect(signed).toBe(flaky.requests);
      await ds.close();
    } finally {
      await flaky.stop();
    }
  });
});
