"""Where a dataset's files live: a local directory, a file:// URL, or an http(s):// URL (src/io/location.ts)."""
import os
import re
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from .errors import INVALID_ARG, UNSAFE_PATH, ShardkitError

_REMOTE = re.compile(r'https?://', re.IGNORECASE)
_SCHEME = re.compile(r'[a-z][a-z0-9+.-]*:', re.IGNORECASE)


def is_remote(location: str) -> bool:
    return _REMOTE.match(location) is not None


def _safe_segments(file: str):
    segments = file.split('/')
    if (file == '' or '\\' in file or '\0' in file or file.startswith('/') or _SCHEME.match(file)
            or any(s in ('', '.', '..') for s in segments)):
        raise ShardkitError(UNSAFE_PATH, f'Refusing file name {file!r}: dataset files must be relative names inside '
                            'the dataset (no leading /, no . or .. segments, no backslashes, no scheme)', file=file)
    return segments


def resolve_location(base: str, file: str) -> str:
    """``file`` (a name from the manifest) inside the dataset at ``base``. For a URL, the name is appended to the
    path, percent-encoded per segment, and the base's query string (a presigned URL's token) is kept."""
    segments = _safe_segments(file)
    if is_remote(base):
        u = urlsplit(base)
        path = u.path if u.path.endswith('/') else u.path + '/'
        return urlunsplit((u.scheme, u.netloc, path + '/'.join(quote(s, safe='') for s in segments), u.query, ''))
    if base.startswith('file:'):
        u = urlsplit(base)
        if u.netloc not in ('', 'localhost'):
            raise ShardkitError(INVALID_ARG, f'Expected a file:// URL of a local directory but received {base}')
        base = unquote(u.path)
    return os.path.join(base, *segments)


def redact_location(location: str) -> str:
    """The location without query string, fragment or user:password, for messages (presigned URLs carry
    credentials in the query)."""
    if not is_remote(location):
        return location
    u = urlsplit(location)
    host = u.netloc.rpartition('@')[2]
    text = urlunsplit((u.scheme, host, u.path or '/', '', ''))
    return text + '?...' if u.query else text
