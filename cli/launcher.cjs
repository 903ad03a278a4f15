#!/usr/bin/env node
/**
 * The `shardkit` bin: sets UV_THREADPOOL_SIZE, then loads the command line (the ES module bundle next to it).
 *
 * CommonJS on purpose: libuv reads UV_THREADPOOL_SIZE once, when its thread pool starts, and Node's ES module
 * loader reads the entry module through that pool, so by the first line of an ES entry the pool already runs with
 * libuv's default 4 threads (measured on Node 20: setting it there changed nothing). Node reads this file
 * synchronously, before the pool exists.
 *
 * The value is imageConcurrency().uvThreadpoolSize (src/passes/image-concurrency.ts): sharp runs each image on a
 * pool thread and passes process one image per core, so one thread per core for images plus libuv's default 4 for
 * file reads, instead of at most 4 images at once however many cores there are. libuv allows at most 1024. A value
 * the user set is kept.
 */
'use strict';
if (!process.env.UV_THREADPOOL_SIZE) {
  process.env.UV_THREADPOOL_SIZE = String(Math.min(1024, require('node:os').availableParallelism() + 4));
}
import('./shardkit.js');
