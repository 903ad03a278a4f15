/**
 * `--pass SPEC` on the command line. The grammar, `NAME[=VALUE]`:
 * - `resize=WxH[:fit]`       fit: inside (default), cover, contain, fill, outside
 * - `normalize`              contrast stretch, format kept
 * - `normalize=M[,M,M]:S[,S,S]` float32 (C,H,W) tensor as member `.npy`, e.g. `normalize=0.485,0.456,0.406:0.229,0.224,0.225`
 * - `format=jpeg|jpg|webp[:quality]` or `format=png`
 * - `tag=dirname` | `tag=FILE.csv` | `tag=FILE.json`
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { formatPass, OUTPUT_FORMATS, type OutputFormat } from './format.js';
import { contrastNormalizePass, tensorNormalizePass } from './normalize.js';
import type { Pass } from './pass.js';
import { resizePass, type ResizeFit } from './resize.js';
import { tagDirnamePass } from './tag-dirname.js';
import { tagFilePass } from './tag-table.js';
import { parseIntegerText } from './validate.js';

export const PASS_NAMES = ['resize', 'normalize', 'format', 'tag'] as const;

export interface ParsePassOptions {
  /** Directory that relative file names in a spec (tag=labels.csv) are resolved against. */
  cwd: string;
}

function specError(spec: string, expected: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INVALID_ARG, `Expected ${expected} for --pass but received ${JSON.stringify(spec)}`);
}

/**
 * Builds a pass from its command-line spec. Option values are validated here, before any file is read.
 * @throws ShardkitError INVALID_ARG naming the spec and what was expected.
 * @example parsePassSpec('resize=224x224:cover', { cwd: process.cwd() })
 */
export function parsePassSpec(spec: string, options: ParsePassOptions): Pass {
  const eq = spec.indexOf('=');
  const name = (eq < 0 ? spec : spec.slice(0, eq)).trim();
  const value = eq < 0 ? undefined : spec.slice(eq + 1).trim();
  switch (name) {
    case 'resize': {
      const match = value === undefined ? null : /^(\d+)x(\d+)(?::(\w+))?$/i.exec(value);
      if (match === null) throw specError(spec, 'resize=WxH[:inside|cover|contain|fill|outside], e.g. resize=224x224');
      const [, width, height, fit] = match;
      return resizePass({
        width: parseIntegerText(width as string) as number,
        height: parseIntegerText(height as string) as number,
        ...(fit === undefined ? {} : { fit: fit as ResizeFit }),
      });
    }
    case 'normalize': {
      if (value === undefined || value === '') return contrastNormalizePass();
      const parts = value.split(':');
      const numbers = parts.map((p) => p.split(',').map((n) => (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(n.trim()) ? Number(n) : NaN)));
      if (parts.length !== 2 || numbers.some((list) => list.some(Number.isNaN))) {
        throw specError(spec, 'normalize or normalize=MEAN:STD with comma-separated numbers, e.g. normalize=0.485,0.456,0.406:0.229,0.224,0.225');
      }
      return tensorNormalizePass({ mean: numbers[0] as number[], std: numbers[1] as number[] });
    }
    case 'format': {
      const match = value === undefined ? null : /^(\w+)(?::(\d+))?$/.exec(value);
      const format = match?.[1]?.toLowerCase() === 'jpg' ? 'jpeg' : match?.[1]?.toLowerCase();
      if (match === null || !(OUTPUT_FORMATS as readonly string[]).includes(format ?? '')) {
        throw specError(spec, 'format=jpeg|webp[:quality] or format=png, e.g. format=webp:85');
      }
      return formatPass({
        format: format as OutputFormat,
        ...(match[2] === undefined ? {} : { quality: Number(match[2]) }),
      });
    }
    case 'tag': {
      if (value === undefined || value === '') throw specError(spec, 'tag=dirname, tag=FILE.csv or tag=FILE.json');
      return value === 'dirname' ? tagDirnamePass() : tagFilePass(value, options.cwd);
    }
    default:
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        `Expected one of ${PASS_NAMES.join(', ')} for --pass but received ${JSON.stringify(spec)} (custom passes go in --pass-module FILE.mjs)`,
      );
  }
}
