/**
 * A built-in pass made again from its manifest record (`{ name, params }`), for `append`: new samples get the passes
 * the dataset's samples got. Passes that read a file of the user's (`tag=FILE.csv`) or run the user's code
 * (`custom:*`) cannot be made from a record: the caller gives them again.
 */
import type { ManifestPass } from '../../formats/manifest.js';
import { formatPass, type OutputFormat } from './format.js';
import { contrastNormalizePass, tensorNormalizePass } from './normalize.js';
import type { Pass } from './pass.js';
import { resizePass, type ResizeFit } from './resize.js';
import { tagDirnamePass } from './tag-dirname.js';

/**
 * The pass `record` describes, or undefined when it is not one this function can make, or when the pass it makes
 * records other params (a record of another version's options).
 * @param classes for tag=dirname: the dataset's class list, kept as it is (new class names go after it).
 */
export function passFromRecord(record: ManifestPass, classes: readonly string[]): Pass | undefined {
  const made = make(record, classes);
  if (made === undefined || JSON.stringify({ name: made.name, params: made.params }) !== JSON.stringify({ name: record.name, params: record.params })) return undefined;
  return made;
}

function make(record: ManifestPass, classes: readonly string[]): Pass | undefined {
  const p = record.params;
  try {
    switch (record.name) {
      case 'resize':
        return resizePass({ width: p.width as number, height: p.height as number, fit: p.fit as ResizeFit });
      case 'normalize':
        if (p.mode === 'contrast') return contrastNormalizePass();
        if (p.mode === 'tensor') return tensorNormalizePass({ mean: p.mean as number[], std: p.std as number[] });
        return undefined;
      case 'format':
        return formatPass({ format: p.format as OutputFormat, ...(p.quality === undefined ? {} : { quality: p.quality as number }) });
      case 'tag':
        return p.source === 'dirname' ? tagDirnamePass({ base: classes }) : undefined;
      default:
        return undefined;
    }
  } catch {
    // params the factory refuses: a record this version cannot make again
    return undefined;
  }
}
