/**
 * Lookups over the B+-tree, written once as generators that yield the page numbers they need and receive the
 * decoded pages: `runSync` drives them from a synchronous page cache (the local fast path), `runAsync` from an async
 * one (HTTP). Every descent checks levels, page bounds and subtree counts against the parent, so a damaged or
 * hostile index ends in SHARDKIT_ERR_CORRUPT_INDEX, never in a loop or a wrong answer from a consistent-looking path.
 */
import { ErrorCodes, ShardkitError } from './errors.js';
import type { IndexEntry } from './index-entry.js';
import { indexRemedy, type IndexHeader } from './index-layout.js';
import { entryAt, type BranchPage, type LeafPage, type Page } from './index-page.js';
import { compareKeys, isSimpleKey } from './key-order.js';

export type PageOp<T> = Generator<number, T, Page>;

export interface TreeInfo {
  header: IndexHeader;
  file: string;
}

export function runSync<T>(op: PageOp<T>, load: (pageNo: number) => Page): T {
  let step = op.next();
  while (!step.done) step = op.next(load(step.value));
  return step.value;
}

export async function runAsync<T>(op: PageOp<T>, load: (pageNo: number) => Page | Promise<Page>): Promise<T> {
  let step = op.next();
  while (!step.done) step = op.next(await load(step.value));
  return step.value;
}

function corrupt(t: TreeInfo, pageNo: number, why: string): never {
  throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${t.file}: page ${pageNo} ${why}; ${indexRemedy(t.header.layout)}`, { file: t.file });
}

/** Where a descent stands: a page, the number of samples before its subtree, and what its parent promised. */
interface Step {
  pageNo: number;
  level: number;
  base: number;
  count: number;
}

/** Checks a fetched page against what its parent promised (type, level, subtree size). */
function checkPage(t: TreeInfo, step: Step, page: Page): void {
  if (step.level === 0) {
    if (page.type !== 'leaf') corrupt(t, step.pageNo, 'should be a leaf');
    if (page.keys.length !== step.count) corrupt(t, step.pageNo, `holds ${page.keys.length} samples, its parent says ${step.count}`);
  } else {
    if (page.type !== 'branch' || page.level !== step.level) corrupt(t, step.pageNo, `should be a branch at level ${step.level}`);
    const total = page.starts[page.starts.length - 1] as number;
    if (total !== step.count) corrupt(t, step.pageNo, `holds ${total} samples, its parent says ${step.count}`);
  }
}

function checkPageNo(t: TreeInfo, step: Step): number {
  if (step.pageNo < 1 || step.pageNo >= t.header.pageCount) corrupt(t, step.pageNo, 'is outside the index');
  return step.pageNo;
}

function rootStep(t: TreeInfo): Step {
  return { pageNo: t.header.rootPage, level: t.header.height - 1, base: 0, count: t.header.entryCount };
}

/**
 * Moves `step` down to child `i` of `branch`, in place: a descent owns one Step from its root to its leaf (a new
 * object per level was 86 of the 936 bytes a shuffled loader epoch allocated per sample, 1-10 KiB samples; with it
 * the loader took ~0.95x the time, median of 6 alternated pairs).
 */
function enterChild(branch: BranchPage, step: Step, i: number): void {
  const start = branch.starts[i] as number;
  step.pageNo = branch.children[i] as number;
  step.level -= 1;
  step.base += start;
  step.count = (branch.starts[i + 1] as number) - start;
}

type Compare = (a: string, b: string) => number;

/** Native comparison: UTF-8 order for keys without surrogates or units above U+D7FF (see isSimpleKey). */
const compareNative: Compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function comparatorFor(page: { simple: boolean }, keySimple: boolean): Compare {
  return page.simple && keySimple ? compareNative : compareKeys;
}

/** Index of the last element of `keys` <= key, or -1. */
function lastAtMost(keys: readonly string[], key: string, cmp: Compare): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(keys[mid] as string, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Index of the first element of `keys` >= key (keys.length when none). */
function firstAtLeast(keys: readonly string[], key: string, cmp: Compare): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(keys[mid] as string, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface LeafHit {
  leaf: LeafPage;
  /** Position of the leaf's first sample. */
  base: number;
  /** Index inside the leaf. */
  index: number;
}

/** Descends to the leaf that would hold `key`; `index` is the first record >= key. */
export function* seekKey(t: TreeInfo, key: string): PageOp<LeafHit | undefined> {
  const hit = yield* seekLeaf(t, key);
  if (hit === undefined) return undefined;
  return { leaf: hit.leaf, base: hit.base, index: firstAtLeast(hit.leaf.keys, key, comparatorFor(hit.leaf, isSimpleKey(key))) };
}

/** A leaf reached by a descent, and the number of samples before it. */
export interface LeafAt {
  leaf: LeafPage;
  base: number;
}

/** One step of a key descent: `page` was fetched for `step`; the leaf, or undefined after moving `step` to the child that would hold `key`. */
function byKey(t: TreeInfo, step: Step, page: Page, key: string, simple: boolean): LeafAt | undefined {
  checkPage(t, step, page);
  if (page.type === 'leaf') return { leaf: page, base: step.base };
  enterChild(page, step, Math.max(0, lastAtMost(page.keys, key, comparatorFor(page, simple))));
  return undefined;
}

/** Descends to the leaf that would hold `key`, without searching it (for callers with a faster way to look inside). */
export function* seekLeaf(t: TreeInfo, key: string): PageOp<LeafAt | undefined> {
  if (t.header.entryCount === 0) return undefined;
  const simple = isSimpleKey(key);
  const step = rootStep(t);
  for (;;) {
    const hit = byKey(t, step, yield checkPageNo(t, step), key, simple);
    if (hit !== undefined) return hit;
  }
}

/**
 * {@link seekLeaf} for a synchronous page source, without a generator: the local fast path, where resuming a
 * generator at every level cost about as much as the rest of the descent (0.6 vs 0.3 us at two levels).
 */
export function seekLeafSync(t: TreeInfo, key: string, load: (pageNo: number) => Page): LeafAt | undefined {
  if (t.header.entryCount === 0) return undefined;
  const simple = isSimpleKey(key);
  const step = rootStep(t);
  for (;;) {
    const hit = byKey(t, step, load(checkPageNo(t, step)), key, simple);
    if (hit !== undefined) return hit;
  }
}

/** The entry for `key` and its position from a {@link seekKey} hit, or undefined. */
export function keyHit(hit: LeafHit | undefined, key: string): { entry: IndexEntry; position: number } | undefined {
  if (hit === undefined) return undefined;
  if (hit.index >= hit.leaf.keys.length || hit.leaf.keys[hit.index] !== key) return undefined;
  return { entry: entryAt(hit.leaf, hit.index), position: hit.base + hit.index };
}

/** Position of the first key >= the sought key (entryCount when none), from a {@link seekKey} hit. */
export function boundHit(hit: LeafHit | undefined): number {
  return hit === undefined ? 0 : hit.base + hit.index;
}

function checkPosition(t: TreeInfo, position: number): void {
  if (!Number.isInteger(position) || position < 0 || position >= t.header.entryCount) {
    throw new ShardkitError(ErrorCodes.OUT_OF_RANGE, `position ${position} is outside [0, ${t.header.entryCount})`, { file: t.file });
  }
}

/** One step of a position descent: `page` was fetched for `step`; the hit in the leaf, or undefined after moving `step` to the child holding `position`. */
function byPosition(t: TreeInfo, step: Step, page: Page, position: number): LeafHit | undefined {
  checkPage(t, step, page);
  if (page.type === 'leaf') return { leaf: page, base: step.base, index: position - step.base };
  const rel = position - step.base;
  let lo = 0;
  let hi = page.children.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((page.starts[mid] as number) <= rel) lo = mid;
    else hi = mid - 1;
  }
  enterChild(page, step, lo);
  return undefined;
}

/** The leaf holding `position` (0 <= position < entryCount) and the index inside it. */
export function* seekPosition(t: TreeInfo, position: number): PageOp<LeafHit> {
  checkPosition(t, position);
  const step = rootStep(t);
  for (;;) {
    const hit = byPosition(t, step, yield checkPageNo(t, step), position);
    if (hit !== undefined) return hit;
  }
}

/** {@link seekPosition} for a synchronous page source, without a generator (see {@link seekLeafSync}). */
export function seekPositionSync(t: TreeInfo, position: number, load: (pageNo: number) => Page): LeafHit {
  checkPosition(t, position);
  const step = rootStep(t);
  for (;;) {
    const hit = byPosition(t, step, load(checkPageNo(t, step)), position);
    if (hit !== undefined) return hit;
  }
}

/**
 * A descent stopped at the leaf level, before the leaf is fetched (for a caller that decodes only what it needs of
 * it, see decodePageTo): the leaf's page number, the samples before it, and the records its parent says it holds.
 */
export interface LeafRef {
  pageNo: number;
  base: number;
  count: number;
}

/** {@link seekPositionSync} through the branches only: the leaf that holds `position`, not fetched. */
export function leafRefByPositionSync(t: TreeInfo, position: number, load: (pageNo: number) => Page): LeafRef {
  checkPosition(t, position);
  const step = rootStep(t);
  // a branch page moves the step down (checkPage refuses a leaf above level 0)
  while (step.level > 0) byPosition(t, step, load(checkPageNo(t, step)), position);
  checkPageNo(t, step);
  return step;
}

/** {@link seekLeafSync} through the branches only: the leaf that would hold `key`, not fetched (undefined: an empty tree). */
export function leafRefByKeySync(t: TreeInfo, key: string, load: (pageNo: number) => Page): LeafRef | undefined {
  if (t.header.entryCount === 0) return undefined;
  const simple = isSimpleKey(key);
  const step = rootStep(t);
  while (step.level > 0) byKey(t, step, load(checkPageNo(t, step)), key, simple);
  checkPageNo(t, step);
  return step;
}

/** Checks a page fetched for `ref` as a descent checks a leaf (its type, its record count against the parent's). */
export function checkLeafPage(t: TreeInfo, ref: LeafRef, page: Page): LeafPage {
  checkPage(t, { pageNo: ref.pageNo, level: 0, base: ref.base, count: ref.count }, page);
  return page as LeafPage;
}

/** Checks the record count of a leaf decoded in part (its header's) against the parent's, as {@link checkLeafPage} does. */
export function checkLeafCount(t: TreeInfo, ref: LeafRef, count: number): void {
  if (count !== ref.count) corrupt(t, ref.pageNo, `holds ${count} samples, its parent says ${ref.count}`);
}

/** The entry from a {@link seekPosition} hit. */
export function positionHit(hit: LeafHit): IndexEntry {
  return entryAt(hit.leaf, hit.index);
}
