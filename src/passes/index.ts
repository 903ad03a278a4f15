/** The preprocessing passes: what src/index.ts re-exports for library users. */
export type { Pass, PassContext, PassDeclaredOutputs, PassOutputs, SampleFunction } from './pass.js';
export { customPass } from './pass.js';
export { parsePassSpec, PASS_NAMES, type ParsePassOptions } from './parse-pass-spec.js';
export { loadPassModule } from './load-pass-module.js';
export { resizePass, RESIZE_FITS, type ResizeFit, type ResizeOptions } from './resize.js';
export { contrastNormalizePass, tensorNormalizePass, type TensorNormalizeOptions } from './normalize.js';
export { formatPass, OUTPUT_FORMATS, type FormatOptions, type OutputFormat } from './format.js';
export { tagDirnamePass, type TagDirnameOptions } from './tag-dirname.js';
export { tagFilePass, tagTablePass } from './tag-table.js';
export { parseCsvLabelTable, parseJsonLabelTable, type LabelTable, type LabelTableMode } from './label-table.js';
export { imageConcurrency, configureSharpForPacking, type ImageConcurrency } from './image-concurrency.js';
export { encodeNpy, decodeNpy, type Float32Tensor } from './npy.js';
