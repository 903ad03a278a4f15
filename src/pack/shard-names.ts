/** A shard file of any writer (any prefix, either layout), or its temporary name: what --force clears from an output. */
const SHARD_FILE_NAME = /^[A-Za-z0-9._-]*\d{6}\.(tar|pack)(\.tmp)?$/;

/** True for the name of a shard file of any writer (or its temporary): what a dataset without its manifest still holds. */
export function isShardFileName(name: string): boolean {
  return SHARD_FILE_NAME.test(name);
}
