// The Node loader's side of test_torch.py: runs `ds.loader(options)` over a dataset from the built package (dist/,
// made by `npm run build`) and answers with each batch's keys and the loader.state() after each batch.
// Usage: node node_loader.mjs < {"dir", "options", "merge"?: [states]} > {"batches": [[key]], "states": [state]} | merged state
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { openDataset, mergeLoaderStates } = await import(pathToFileURL(path.join(root, 'dist', 'src', 'index.js')).href);
const request = JSON.parse(readFileSync(0, 'utf8'));

if (request.merge !== undefined) {
  process.stdout.write(`${JSON.stringify(mergeLoaderStates(request.merge))}\n`);
} else {
  const ds = await openDataset(request.dir);
  const loader = ds.loader(request.options);
  const batches = [];
  const states = [];
  for await (const batch of loader) {
    batches.push(batch.map((s) => s.key));
    states.push(loader.state());
  }
  await ds.close();
  process.stdout.write(`${JSON.stringify({ batches, states })}\n`);
}
