/** Pure codecs over bytes: everything another program needs to read a shardkit dataset (see SPEC.md). */
export * from './errors.js';
export * from './sample.js';
export * from './key-order.js';
export * from './checksum.js';
export * from './index-entry.js';
export * from './index-layout.js';
export * from './index-page.js';
export * from './btree-builder.js';
export * from './btree-reader.js';
export * from './tar-header.js';
export * from './packed-layout.js';
export * from './lz4.js';
export * from './manifest.js';
export * from './shard-index.js';
