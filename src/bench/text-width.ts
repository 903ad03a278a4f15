/**
 * Text widths for the charts' layout in Node, where vega has no canvas to measure text and estimates 0.8 em per
 * character: about 1.4x too wide for these labels, which made every chart wider than its plot (empty space on the
 * right, then shrunk to fit the page) and cut legends short. These are the advance widths of DejaVu Sans, the
 * sans-serif of most Linux desktops and of headless Chromium, measured with canvas measureText in Chromium; the
 * sans-serif fonts of macOS and Windows (Helvetica, Arial) are narrower, so text laid out with these widths fits there too.
 */

/** Advance widths in thousandths of an em of the printable ASCII characters (32 to 126), regular weight. */
const REGULAR = [
  318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636, 636,
  636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787,
  603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635,
  634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
];
/** The same, bold. */
const BOLD = [
  348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696, 696, 696, 696,
  696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850,
  733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716,
  712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652, 582, 712, 365, 712, 838,
];
/** Any other character: as wide as the widest Latin letters (µ, –, … are narrower). */
const OTHER = 1000;
const FIRST = 32;

/** Width in pixels of `text` set in sans-serif at `fontSize` px. */
export function sansSerifWidth(text: string, fontSize: number, bold = false): number {
  const table = bold ? BOLD : REGULAR;
  let em = 0;
  for (const ch of text) {
    const w = table[(ch.codePointAt(0) ?? 0) - FIRST];
    em += w ?? OTHER;
  }
  return (em / 1000) * fontSize;
}

/** A font weight as vega gives it ('bold', 700, 'normal', undefined): bold from 600 up. */
export function isBold(weight: unknown): boolean {
  return weight === 'bold' || weight === 'bolder' || (typeof weight === 'number' && weight >= 600) || (typeof weight === 'string' && Number(weight) >= 600);
}
