import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { isRemote, redactLocation, resolveLocation } from '../../src/io/location.js';

describe('isRemote', () => {
  it('is true for http and https URLs only', () => {
    expect(isRemote('http://h/ds')).toBe(true);
    expect(isRemote('HTTPS://h/ds?x=1')).toBe(true);
    expect(isRemote('/data/ds')).toBe(false);
    expect(isRemote('data/http://x')).toBe(false);
    expect(isRemote('file:///data/ds')).toBe(false);
    expect(isRemote('httpx://h')).toBe(false);
  });
});

describe('resolveLocation', () => {
  it('joins local directories, relative or absolute, and file:// URLs', () => {
    expect(resolveLocation('/data/ds', 'shard-00001.tar')).toBe('/data/ds/shard-00001.tar');
    expect(resolveLocation('/data/ds/', 'index.skx')).toBe('/data/ds/index.skx');
    expect(resolveLocation('rel/ds', 'sub/a.tar')).toBe(path.join('rel/ds', 'sub', 'a.tar'));
    expect(resolveLocation(pathToFileURL('/data/my ds').href, 'a.tar')).toBe('/data/my ds/a.tar');
  });

  it('appends to an http(s) URL path as a directory, with or without trailing slash', () => {
    expect(resolveLocation('http://127.0.0.1:8080/ds', 'manifest.json')).toBe('http://127.0.0.1:8080/ds/manifest.json');
    expect(resolveLocation('https://cdn.example/a/b/', 'shard-1.tar')).toBe('https://cdn.example/a/b/shard-1.tar');
    expect(resolveLocation('https://cdn.example', 'x.tar')).toBe('https://cdn.example/x.tar');
  });

  it('keeps the query string of a presigned or token-carrying dataset URL and drops the fragment', () => {
    const base = 'https://bucket.s3.example/ds?X-Amz-Signature=ab%2Fcd&X-Amz-Expires=3600#frag';
    expect(resolveLocation(base, 'shard-00002.tar')).toBe(
      'https://bucket.s3.example/ds/shard-00002.tar?X-Amz-Signature=ab%2Fcd&X-Amz-Expires=3600',
    );
    expect(resolveLocation('https://h/c/ds/?sv=2024&sig=x%3D', 'sub/a.tar')).toBe('https://h/c/ds/sub/a.tar?sv=2024&sig=x%3D');
  });

  it('percent-encodes each segment of the file name', () => {
    expect(resolveLocation('http://h/ds', 'a b/c#d?.tar')).toBe('http://h/ds/a%20b/c%23d%3F.tar');
    expect(resolveLocation('http://h/my%20ds', 'x.tar')).toBe('http://h/my%20ds/x.tar');
  });

  it('refuses names that would leave the dataset, locally and remotely', () => {
    for (const bad of ['', '/etc/passwd', '../x.tar', 'a/../../x', './a', 'a//b', 'a\\b', 'http://evil/x', 'a/', 'x\0y']) {
      for (const base of ['/data/ds', 'https://h/ds?sig=1']) {
        let err: unknown;
        try {
          resolveLocation(base, bad);
        } catch (e) {
          err = e;
        }
        expect(err, `${base} + ${JSON.stringify(bad)}`).toBeInstanceOf(ShardkitError);
        expect((err as ShardkitError).code).toBe(ErrorCodes.UNSAFE_PATH);
      }
    }
  });
});

describe('errors about URLs', () => {
  it('hold no credentials anywhere, cause included (Node quotes the whole input in its URL errors)', () => {
    let err: unknown;
    try {
      resolveLocation('https://alice:s3cr3tpw@store.example:99999/ds?X-Amz-Signature=SECRETQ', 'a.tar');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: ErrorCodes.INVALID_ARG });
    expect(inspect(err, { depth: 10 })).not.toMatch(/s3cr3tpw|SECRETQ|alice/);
  });
});

describe('redactLocation', () => {
  it('removes query strings and credentials from URLs and leaves paths alone', () => {
    expect(redactLocation('https://u:p@h/ds/a.tar?X-Amz-Signature=secret')).toBe('https://h/ds/a.tar?...');
    expect(redactLocation('http://h/ds/a.tar')).toBe('http://h/ds/a.tar');
    expect(redactLocation('/data/ds/a?.tar')).toBe('/data/ds/a?.tar');
    // URLs the parser refuses (a port out of range, a space in the host) lose their user and query all the same
    expect(redactLocation('https://u:secret@h:99999/x?sig=token')).toBe('https://h:99999/x?...');
    expect(redactLocation('http://u:p@ex ample.com/ds')).toBe('http://ex ample.com/ds');
    // a password with '/', '?' or '#' in a URL the parser refuses (base64 tokens hold '/')
    expect(redactLocation('http://alice:pa/ss@127.0.0.1:99999/ds')).toBe('http://127.0.0.1:99999/ds');
    expect(redactLocation('http://alice:pa#ss@127.0.0.1:99999/ds')).toBe('http://127.0.0.1:99999/ds');
    expect(redactLocation('https://alice:a/b?c#d@h:99999/ds?sig=token')).toBe('https://h:99999/ds?...');
  });
});
