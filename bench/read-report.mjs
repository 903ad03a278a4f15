/** The markdown tables of bench/read.mjs, from its JSON report. */

/** The goal each ratio is held to (issue 4), or what the row is there to show. */
const GOALS = {
  'getSync vs readFileSync': '>= 3',
  'atSync vs readFileSync': '>= 3',
  'atSync (verify off) vs readFileSync': '(no CRC, like the raw read)',
  'getViewSync vs readFileSync': '>= 3',
  'atViewSync vs readFileSync': '>= 3',
  'getSync (verify off) vs readFileSync': '(no CRC)',
  'atViewSync (verify off) vs readFileSync': '(no CRC)',
  'atSync (native off) vs readFileSync': '(pread path)',
  'atViewSync (native off) vs readFileSync': '(pread path)',
  'getSync vs lmdb get': '> 1',
  'getSync (verify off) vs lmdb get': '(no CRC, like lmdb)',
  'getSync (native off) vs lmdb get': '(pread path)',
  'getViewSync vs lmdb get': '> 1',
  'getViewSync vs lmdb getBinaryFast': '(view vs view)',
  'owned-copy floor vs readFileSync': '(the most any copying read can reach)',
  'getSync / owned-copy floor': '(1.0 = getSync costs no more than its copy)',
  'atViewSync / view-copy floor': '(1.0 = atViewSync costs no more than its copy)',
  'view-copy floor vs py-lmdb txn.get': '(the most a read into a reused buffer can reach)',
  'loader vs fs.promises.readFile': '>= 3',
  'atSync / loader (loader time as a share of sync)': '>= 0.83 (within 20 %)',
  'atSync / loader view': '>= 0.83',
  'loader b64 full vs lmdb-js get': '>= 1.5 (issue 28)',
  'atViewSync vs py-lmdb txn.get': '>= 1 (issue 28)',
  'atViewSync vs py-lmdb buffers': '(view vs view)',
  'loader view (b64 full) vs py-lmdb txn.get': '>= 1 (issue 28)',
  'atSync vs py-lmdb txn.get': '>= 0.7 (issue 28)',
  'loader b64 full vs py-lmdb txn.get': '>= 0.7 (issue 28)',
  'atViewSync (verify off) vs py-lmdb txn.get': '(no CRC32C, as py-lmdb)',
  'loader view (b64 full, verify off) vs py-lmdb txn.get': '(no CRC32C, as py-lmdb)',
  'atSync (verify off) vs py-lmdb txn.get': '(no CRC32C, as py-lmdb)',
  'loader b64 full (verify off) vs py-lmdb txn.get': '(no CRC32C, as py-lmdb)',
};
for (const sh of ['none', 'full', 'block']) for (const b of [1, 64, 256]) GOALS[`loader b${b} ${sh} / atSync (same order)`] = '>= 0.9 (issue 28)';

export function renderMarkdown(report) {
  const { data, machine, settings, medianMs: med, perSampleUs, cpuPerSampleUs, runsMs, ratios, cpuRatios, pairedRatios, runRatios, counts, strace } = report;
  const n = data.samples;
  const lines = [];
  lines.push(`## Read benchmark: ${n} samples, ${(data.bytes / 2 ** 20).toFixed(0)} MiB, ${data.shards} shards, warm cache, random order`);
  lines.push('');
  lines.push(`Load average while running: ${machine.loadAverage.map((l) => l.toFixed(1)).join(', ')} on ${machine.cpus} cores. Native addon: ${settings.native ? `on (memory-mapped shards, CRC32C by ${settings.crc32cKernel ?? 'the CPU'})` : 'off (pread)'}. Each method in a fresh process: ${settings.warmupEpochs ?? 1} warm-up epoch(s), then the median of ${settings.epochsTimed ?? 3}.`);
  lines.push('');
  lines.push('| method | median wall ms / epoch | wall us / sample | CPU us / sample | wall runs (ms) |');
  lines.push('|---|---:|---:|---:|---|');
  for (const k of Object.keys(med)) lines.push(`| ${k} | ${med[k].toFixed(0)} | ${perSampleUs[k].toFixed(2)} | ${cpuPerSampleUs[k].toFixed(2)} | ${runsMs[k].map((t) => t.toFixed(0)).join(', ')} |`);
  lines.push('');
  lines.push('| ratio (higher = shardkit faster) | wall (of medians) | wall (median of runs) | runs, min-max | CPU | goal |');
  lines.push('|---|---:|---:|---:|---:|---|');
  for (const [k, v] of Object.entries(ratios)) {
    const runs = runRatios[k];
    lines.push(`| ${k} | ${v.toFixed(2)} | ${pairedRatios[k].toFixed(2)} | ${Math.min(...runs).toFixed(2)}-${Math.max(...runs).toFixed(2)} | ${cpuRatios[k].toFixed(2)} | ${GOALS[k]} |`);
  }
  lines.push('');
  lines.push('| epoch counts | opens | fstat | sample reads | of them from a memory map (no syscall) | read syscalls | index page reads |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|');
  for (const [k, c] of Object.entries(counts)) {
    if (c.fstats !== undefined) lines.push(`| ${k} | ${c.opens} | ${c.fstats} | ${c.sampleReads} | ${c.mappedReads} | ${c.readSyscalls} | ${c.indexPageReads} |`);
  }
  lines.push(`| raw files | ${n} | ${n} | >= ${n} | 0 | >= ${n} | - |`);
  if (strace) {
    lines.push('');
    lines.push('| strace -c -f, per sample (minus a no-op run) | I/O syscalls | all syscalls | breakdown |');
    lines.push('|---|---:|---:|---|');
    for (const [k, c] of Object.entries(strace)) {
      lines.push(`| ${k} | ${c.ioSyscallsPerSample.toFixed(2)} | ${c.allSyscallsPerSample.toFixed(2)} | ${Object.entries(c.perSample).map(([s, v]) => `${s} ${v.toFixed(2)}`).join(', ')} |`);
    }
  }
  return lines.join('\n');
}
