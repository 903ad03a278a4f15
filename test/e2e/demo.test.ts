/** `npm run demo` (bench/demo.mjs) at a tiny size: it ends by saying how much disk it took, where, and how to remove it. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

describe('the demo', () => {
  it('says where its files are, how much disk they take and how to remove them', () => {
    const dir = path.join(tmpDir(), 'shardkit-demo');
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bench', 'demo.mjs'), '--dir', dir, '--samples', '20', '--epochs', '1', '--repeat', '1'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const last = r.stderr.trim().split('\n').pop() as string;
    const mib = /^The demo's files take (\d+) MiB in (.*); remove them with: rm -rf (.*)$/.exec(last);
    expect(mib, last).not.toBeNull();
    expect(mib?.[2]).toBe(dir);
    expect(mib?.[3]).toBe(dir);
    expect(fs.readdirSync(dir).sort()).toEqual(['raw', 'report', 'shards', 'shards-224']);
  });

  it('keeps its default directory out of git in the clone', () => {
    const ignored = spawnSync('git', ['check-ignore', '-q', 'shardkit-demo/raw/x.jpg'], { cwd: ROOT });
    expect(ignored.status).toBe(0);
  });
});
