/** The fenced code blocks of one language in one section of a Markdown document, for tests that run the docs. */

/** The fenced blocks of `lang` in the section of `markdown` that starts at the line `heading`, in order. */
export function fencedBlocks(markdown: string, heading: string, lang: string): string[] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no section ${heading}`);
  const level = heading.slice(0, heading.indexOf(' ') + 1);
  const next = markdown.indexOf(`\n${level}`, start + heading.length + 2);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  const blocks: string[] = [];
  const fence = new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm');
  for (const m of section.matchAll(fence)) blocks.push(m[1]!);
  return blocks;
}
