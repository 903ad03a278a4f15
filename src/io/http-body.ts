/** A response body, collected into one buffer of the length the caller's plan expects. */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { TransientError } from './http-errors.js';

/** How to handle a response head: read a body (of exactly/at most n bytes) or fail with an error. */
export type BodyPlan =
  | { readonly read: 'exact'; readonly length: number }
  | { readonly read: 'upTo'; readonly maxBytes: number }
  | { readonly fail: Error };

/** Collects a response body into one buffer, enforcing the length the plan expects. */
export class BodyCollector {
  received = 0;
  private readonly exact: Buffer | undefined;
  private readonly chunks: Buffer[] = [];

  constructor(
    private readonly plan: { read: 'exact'; length: number } | { read: 'upTo'; maxBytes: number },
    private readonly name: string,
  ) {
    this.exact = plan.read === 'exact' ? Buffer.allocUnsafe(plan.length) : undefined;
  }

  add(chunk: Buffer): Error | undefined {
    const limit = this.plan.read === 'exact' ? this.plan.length : this.plan.maxBytes;
    if (this.received + chunk.length > limit) {
      return this.plan.read === 'exact'
        ? new ShardkitError(ErrorCodes.HTTP, `${this.name} sent more than the ${limit} bytes its headers announced`, {
            file: this.name,
          })
        : new ShardkitError(ErrorCodes.TOO_LARGE, `${this.name} is larger than the ${limit}-byte limit for this read`, {
            file: this.name,
          });
    }
    if (this.exact !== undefined) chunk.copy(this.exact, this.received);
    else this.chunks.push(chunk);
    this.received += chunk.length;
    return undefined;
  }

  finish(): Buffer | Error {
    if (this.exact === undefined) return Buffer.concat(this.chunks, this.received);
    if (this.received < this.exact.length) {
      return new TransientError(`body ended after ${this.received} of ${this.exact.length} bytes`);
    }
    return this.exact;
  }
}
