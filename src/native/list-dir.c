/*
 * Directory listings for pack's walk, part of shardkit's native addon: one directory read on the thread pool and
 * sorted in C, handed to JavaScript as two strings instead of an object per entry (what fs.readdir's Dirents cost
 * on Lots Of Small Files is most of a walk's time).
 *
 * listDirectory(path, sampleOrder) returns a Promise of [kinds, names]: `names` holds the entries' names joined by
 * NUL (no name holds NUL), `kinds` one character per entry, 'f' regular file, 'd' directory, 'l' symbolic link,
 * 'o' anything else; "." and ".." left out. Entries come sorted in UTF-8 byte order of the sort key that
 * src/pack/walk-order.ts listingSortKey gives them, a link sorted as a file: `name/` for a directory, else
 * `stem NUL ext NUL name` in sample order or `name` in path order. The promise rejects with an Error whose `code` is
 * the errno name and `syscall` "scandir", or ERR_SHARDKIT_NATIVE_NOT_UTF8 when a name is not valid UTF-8 (the walk
 * then lists that directory again the portable way, which names the bytes in its error).
 */
#define _DEFAULT_SOURCE /* DT_* in dirent.h */
#define NAPI_VERSION 8
#include <node_api.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* read-file.c */
const char *sk_errno_name(int e);

typedef struct {
  /* the sort key at keys[key, key + key_len); the name inside it at name (a prefix or, files in sample order, the tail) */
  size_t key, key_len, name, name_len;
  char kind;
} entry_t;

typedef struct {
  char *path;
  int sample_order;
  /* results, filled on the thread pool */
  int err; /* errno, or -1: a name is not UTF-8 */
  char *keys;
  entry_t *entries;
  size_t count;
  napi_deferred deferred;
  napi_async_work work;
} listing_t;

/* Whether s[0, n) is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
    else return 0;
    if (i + len > n) return 0;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
    i += len;
  }
  return 1;
}

/* The keys of the listing this thread is sorting: qsort takes no context, and qsort_r's signature differs between
 * glibc and the BSDs. Listings sort on the thread pool, several at once. */
static _Thread_local const char *sort_keys;

/* qsort comparator: byte order of the sort keys, a shorter key before any longer one it begins. */
static int by_key(const void *pa, const void *pb) {
  const entry_t *a = pa, *b = pb;
  size_t m = a->key_len < b->key_len ? a->key_len : b->key_len;
  int c = memcmp(sort_keys + a->key, sort_keys + b->key, m);
  if (c != 0) return c;
  return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

static char kind_of(DIR *dir, const struct dirent *d) {
  unsigned char type = d->d_type;
  if (type == DT_UNKNOWN) {
    /* some file systems leave the type out of the listing */
    struct stat st;
    if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 'o';
    if (S_ISREG(st.st_mode)) return 'f';
    if (S_ISDIR(st.st_mode)) return 'd';
    if (S_ISLNK(st.st_mode)) return 'l';
    return 'o';
  }
  return type == DT_REG ? 'f' : type == DT_DIR ? 'd' : type == DT_LNK ? 'l' : 'o';
}

/* Reads and sorts the listing (thread pool: no Node-API calls here). */
static void list_execute(napi_env env, void *data) {
  (void)env;
  listing_t *l = data;
  DIR *dir = opendir(l->path);
  if (dir == NULL) {
    l->err = errno;
    return;
  }
  size_t cap = 256, keys_cap = 16384, keys_used = 0;
  l->entries = malloc(cap * sizeof(entry_t));
  l->keys = malloc(keys_cap);
  if (l->entries == NULL || l->keys == NULL) {
    l->err = ENOMEM;
    closedir(dir);
    return;
  }
  for (;;) {
    errno = 0;
    struct dirent *d = readdir(dir);
    if (d == NULL) {
      if (errno != 0) l->err = errno;
      break;
    }
    const char *name = d->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    size_t n = strlen(name);
    if (!valid_utf8((const unsigned char *)name, n)) {
      l->err = -1;
      break;
    }
    char kind = kind_of(dir, d);
    /* longest key: stem NUL ext NUL name (2n + 2) */
    if (keys_used + 2 * n + 2 > keys_cap || l->count == cap) {
      while (keys_used + 2 * n + 2 > keys_cap) keys_cap *= 2;
      if (l->count == cap) cap *= 2;
      char *keys = realloc(l->keys, keys_cap);
      if (keys != NULL) l->keys = keys;
      entry_t *entries = realloc(l->entries, cap * sizeof(entry_t));
      if (entries != NULL) l->entries = entries;
      if (keys == NULL || entries == NULL) {
        l->err = ENOMEM;
        break;
      }
    }
    entry_t *e = &l->entries[l->count++];
    char *k = l->keys + keys_used;
    e->kind = kind;
    e->key = keys_used;
    e->name = keys_used;
    e->name_len = n;
    memcpy(k, name, n);
    if (kind == 'd') {
      k[n] = '/';
      e->key_len = n + 1;
    } else if (!l->sample_order) {
      e->key_len = n;
    } else {
      const char *dot = memchr(name, '.', n);
      size_t stem = dot == NULL ? n : (size_t)(dot - name);
      size_t ext = dot == NULL ? 0 : n - stem - 1;
      /* stem NUL ext NUL name: the stem is already in place */
      k[stem] = 0;
      memcpy(k + stem + 1, name + n - ext, ext);
      k[stem + 1 + ext] = 0;
      memcpy(k + stem + 2 + ext, name, n);
      e->key_len = stem + 2 + ext + n;
      e->name = keys_used + stem + 2 + ext;
    }
    keys_used += e->key_len;
  }
  closedir(dir);
  if (l->err != 0) return;
  sort_keys = l->keys;
  qsort(l->entries, l->count, sizeof(entry_t), by_key);
  sort_keys = NULL;
}

static void list_free(listing_t *l) {
  free(l->path);
  free(l->keys);
  free(l->entries);
  free(l);
}

static napi_value list_error(napi_env env, int err) {
  napi_value error, message, code, syscall;
  const char *text = err < 0 ? "scandir: a name is not valid UTF-8" : strerror(err);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &message);
  napi_create_error(env, NULL, message, &error);
  napi_create_string_utf8(env, err < 0 ? "ERR_SHARDKIT_NATIVE_NOT_UTF8" : sk_errno_name(err), NAPI_AUTO_LENGTH, &code);
  napi_set_named_property(env, error, "code", code);
  napi_create_string_utf8(env, "scandir", NAPI_AUTO_LENGTH, &syscall);
  napi_set_named_property(env, error, "syscall", syscall);
  return error;
}

/* Back on the JavaScript thread: resolves with [kinds, names] or rejects. */
static void list_complete(napi_env env, napi_status status, void *data) {
  listing_t *l = data;
  napi_value result = NULL;
  int ok = status == napi_ok && l->err == 0;
  if (ok) {
    size_t bytes = 0;
    for (size_t i = 0; i < l->count; i++) bytes += l->entries[i].name_len + 1;
    char *kinds = malloc(l->count + 1), *names = malloc(bytes + 1);
    size_t at = 0;
    for (size_t i = 0; kinds != NULL && names != NULL && i < l->count; i++) {
      const entry_t *e = &l->entries[i];
      kinds[i] = e->kind;
      if (i > 0) names[at++] = 0;
      memcpy(names + at, l->keys + e->name, e->name_len);
      at += e->name_len;
    }
    napi_value k, n;
    if (kinds == NULL || names == NULL || napi_create_string_latin1(env, kinds, l->count, &k) != napi_ok ||
        napi_create_string_utf8(env, names, at, &n) != napi_ok || napi_create_array_with_length(env, 2, &result) != napi_ok ||
        napi_set_element(env, result, 0, k) != napi_ok || napi_set_element(env, result, 1, n) != napi_ok) {
      l->err = ENOMEM;
      ok = 0;
    }
    free(kinds);
    free(names);
  }
  if (ok) napi_resolve_deferred(env, l->deferred, result);
  else napi_reject_deferred(env, l->deferred, list_error(env, l->err != 0 ? l->err : EIO));
  napi_delete_async_work(env, l->work);
  list_free(l);
}

/* listDirectory(path, sampleOrder): see the top of this file. */
napi_value sk_list_directory(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], promise, name;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  size_t length = 0;
  bool sample_order = false;
  if (argc < 2 || napi_get_value_string_utf8(env, argv[0], NULL, 0, &length) != napi_ok || napi_get_value_bool(env, argv[1], &sample_order) != napi_ok) {
    napi_throw_type_error(env, "ERR_SHARDKIT_NATIVE_ARG", "listDirectory(path, sampleOrder)");
    return NULL;
  }
  listing_t *l = calloc(1, sizeof *l);
  if (l == NULL || (l->path = malloc(length + 1)) == NULL) {
    free(l);
    napi_throw_error(env, "ERR_SHARDKIT_NATIVE_ARG", "listDirectory: out of memory");
    return NULL;
  }
  napi_get_value_string_utf8(env, argv[0], l->path, length + 1, &length);
  if (strlen(l->path) != length) {
    list_free(l);
    napi_throw_type_error(env, "ERR_SHARDKIT_NATIVE_ARG", "listDirectory: the path holds a NUL");
    return NULL;
  }
  l->sample_order = sample_order;
  if (napi_create_promise(env, &l->deferred, &promise) != napi_ok || napi_create_string_utf8(env, "shardkit:listDirectory", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, list_execute, list_complete, l, &l->work) != napi_ok || napi_queue_async_work(env, l->work) != napi_ok) {
    list_free(l);
    return NULL;
  }
  return promise;
}
