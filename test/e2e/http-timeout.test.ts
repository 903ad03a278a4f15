/**
 * Issue 26, item 7 through the built CLI: `--timeout` on every command that reads a dataset bounds a stalled or
 * trickling server. The server runs in this process, so the CLI runs asynchronously.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { startFlakyServer, type Fault } from '../helpers/flaky-server.js';
import { CLI } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

function shardkitAsync(args: string[]): Promise<{ status: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8' }, (err, _stdout, stderr) => {
      resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stderr });
    });
  });
}

let root: string;
beforeAll(async () => {
  root = tmpDir();
  const w = new DatasetWriter({ dir: path.join(root, 'ds') });
  for (let i = 0; i < 20; i++) w.add({ key: `k${i}`, members: { bin: Buffer.alloc(5000, i) } });
  await w.finish();
});

describe('--timeout', () => {
  for (const fault of ['hang', 'trickle'] as Fault[]) {
    for (const args of [['info'], ['ls'], ['get', '', 'k1'], ['verify'], ['extract', '', 'X'], ['derive', '', '--out', 'X', '--pass', 'tag=dirname']]) {
      const command = args[0] as string;
      it(`stalled_server_${fault}_${command}: fails with one HTTP line within its --timeout`, async () => {
        const server = await startFlakyServer(root, Array(50).fill(fault));
        try {
          const url = `${server.url}/ds`;
          const argv = [command, url, ...args.slice(1).filter((a) => a !== '').map((a) => (a === 'X' ? path.join(tmpDir(), 'out') : a)), '--timeout', '800ms'];
          const r = await shardkitAsync(argv);
          expect(r.status, r.stderr).toBe(1);
          expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_HTTP: GET \S+ did not finish within 800 ms [^\n]*--timeout[^\n]*\n$/);
          // the first request that ran out of time ended the command, with no retry (a trickled small file may finish
          // in time first). At most one: on a loaded machine the in-process server may not have parsed the request
          // before the CLI gave up on it, and then counts none.
          if (fault === 'hang') expect(server.requests).toBeLessThanOrEqual(1);
        } finally {
          await server.stop();
        }
      });
    }
  }

  it('a bad --timeout is a usage error', async () => {
    const r = await shardkitAsync(['info', 'http://127.0.0.1:1/ds', '--timeout', 'soon']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: Expected a duration .* for --timeout but received "soon"\n$/);
  });
});
