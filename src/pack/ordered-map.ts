/**
 * Maps an async iterable with up to `concurrency` jobs in flight and yields results in input order: the writer
 * sees samples in walk order (deterministic output) while image passes run on every core. Memory is bounded by
 * the window of `concurrency` pending items.
 */
export async function* orderedMap<T, R>(input: AsyncIterable<T>, concurrency: number, fn: (item: T) => Promise<R>): AsyncGenerator<R> {
  const window: Promise<R>[] = [];
  for await (const item of input) {
    const job = fn(item);
    job.catch(() => undefined); // handled when it reaches the head of the window
    window.push(job);
    if (window.length >= concurrency) yield await (window.shift() as Promise<R>);
  }
  while (window.length > 0) yield await (window.shift() as Promise<R>);
}
