// The Node side of the cross-language tests: writes datasets with DatasetWriter and reads them with the Node
// reader, from the built package (dist/, made by `npm run build`, which `npm test` runs first).
// Usage: node node_side.mjs write|probe < request.json > answer.json
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const dist = (p) => pathToFileURL(path.join(root, 'dist', p)).href;
const request = JSON.parse(readFileSync(0, 'utf8'));
const command = process.argv[2];

if (command === 'write') {
  // { dir, options, samples: [{ key, members: { ext: base64 } }] }
  const { DatasetWriter } = await import(dist('src/pack/dataset-writer.js'));
  const w = new DatasetWriter({ dir: request.dir, ...request.options });
  for (const s of request.samples) {
    const members = {};
    for (const [ext, b64] of Object.entries(s.members)) members[ext] = Buffer.from(b64, 'base64');
    w.add({ key: s.key, members });
  }
  await w.finish();
  process.stdout.write('{}\n');
} else if (command === 'probe') {
  // { jobs: [{ location, options, ops: [["get", key] | ["at", i] | ["has", key] | ["keys", range]] }] }
  // -> [{ open: code|null, results: [code|"ok"|value] }]: what the Node reader does, op by op
  const { openDataset } = await import(dist('src/read/dataset.js'));
  const out = [];
  for (const job of request.jobs) {
    const answer = { open: null, results: [] };
    let ds;
    try {
      ds = await openDataset(job.location, job.options ?? {});
    } catch (err) {
      answer.open = err.code ?? String(err);
      answer.openMessage = err.message;
    }
    if (ds !== undefined) {
      for (const [op, arg] of job.ops) {
        try {
          if (op === 'get') answer.results.push(digest(await ds.get(arg)));
          else if (op === 'at') answer.results.push(digest(await ds.at(arg)));
          else if (op === 'has') answer.results.push(await ds.has(arg));
          else if (op === 'keys') {
            const keys = [];
            for await (const k of ds.keys(arg)) keys.push(k);
            answer.results.push(keys);
          }
        } catch (err) {
          answer.results.push({ code: err.code ?? String(err), ...(request.messages ? { message: err.message } : {}) });
        }
      }
      await ds.close();
    }
    out.push(answer);
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
} else {
  throw new Error(`unknown command ${command}`);
}

/** A sample as the Python side reports it (conftest.digest): key and each member's SHA-256, by extension. */
function digest(sample) {
  const members = {};
  for (const [ext, bytes] of Object.entries(sample.members)) members[ext] = createHash('sha256').update(bytes).digest('hex');
  return { key: sample.key, members };
}
