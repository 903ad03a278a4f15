/*
 * verify's leaf scan, in C (src/verify/leaf-scan.ts holds the same loop in JavaScript, the fallback and the
 * reference this must equal: test/property/native-verify.test.ts compares them). verify-take.c checks the samples
 * the scan lists.
 *
 *   verifyLeafScan(page, pageNo, records, firstKey, lastKey, out[, names, table])
 *       LeafScan.scan: reads a leaf page's records into `records` (a Float64Array of RECORD_ARRAYS x capacity: see
 *       verify-records.h) at index i for record i; out (Float64Array, LEAF_OUT_COUNT) gets count (0: the page is
 *       not one this walk takes), next, the totals, the one shard, the last end and the lengths of the first and
 *       last keys, whose bytes go to firstKey and lastKey. When `names` is given and not empty, each record of one member
 *       stored as is gets its member's name (key, ".", extension: the tar layout's member name) in `names`, at
 *       NAME_START for NAME_LENGTH bytes (-1 and 0 for the others, and for names past the end of `names`; these
 *       columns and MEMBER_ROW are not written when `names` is empty); out's
 *       NAMES_WANTED says how many bytes all of them needed. A record of several members, all stored as they are,
 *       gets rows in `table` from MEMBER_ROW (ROW_COLUMNS numbers a member: its start in the span, size, CRC32C and
 *       name), when they and their names fit; -1 otherwise.
 *
 * It takes the page as hostile: every length and offset is checked before a byte is read, and anything unusual
 * returns "not taken", leaving the page to the JavaScript path, which names what is wrong. Numbers are doubles,
 * added in the same order as in JavaScript, so every sum and bound is the same to the last bit.
 */
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "verify-records.h"

/* formats/index-page.ts: the page header */
#define PAGE_HEADER_BYTES 16
#define PAGE_TYPE 0
#define PAGE_FLAGS 1
#define PAGE_COUNT 2
#define PAGE_CRC 4
#define PAGE_NO 8
#define PAGE_LINK 12
#define PAGE_TYPE_LEAF 2
/* formats/leaf-format.ts: record and member flags */
#define RECORD_SAME_SHARD 0x01
#define RECORD_CONTIGUOUS 0x02
#define RECORD_SAME_SHAPE 0x04
#define KNOWN_RECORD_FLAGS (RECORD_SAME_SHARD | RECORD_CONTIGUOUS | RECORD_SAME_SHAPE)
/*
 * The record flags a record may have, as a bit set over the values 0..KNOWN_RECORD_FLAGS: the first record of a
 * page 0 alone; the others any known flags, but "contiguous" only with "same shard".
 */
#define FIRST_RECORD_FLAGS (1u << 0)
#define NEXT_RECORD_FLAGS                                                                                                  \
  ((1u << 0) | (1u << RECORD_SAME_SHARD) | (1u << (RECORD_SAME_SHARD | RECORD_CONTIGUOUS)) | (1u << RECORD_SAME_SHAPE) | \
   (1u << (RECORD_SAME_SHAPE | RECORD_SAME_SHARD)) | (1u << (RECORD_SAME_SHAPE | RECORD_SAME_SHARD | RECORD_CONTIGUOUS)))
#define MEMBER_CODEC_MASK 0x0f
#define MEMBER_EXT_SAME 0x10
#define KNOWN_MEMBER_FLAGS (MEMBER_CODEC_MASK | MEMBER_EXT_SAME)
#define CODEC_NONE 0
#define CODEC_LZ4 1
/* leaf-scan.ts */
#define MAX_VARINT_BYTES 8
#define MAX_MEMBERS 256
#define SLASH 0x2f
#define DOT 0x2e
#define BACKSLASH 0x5c
#define MAX_SAFE_INTEGER 9007199254740991.0

/*
 * A LEB128 varint of a safe integer at *pos (pos moves past it), or -1 when it is not one or runs past end. Signed
 * 64-bit integers, not size_t or doubles, until a value must be a double: their conversions are one instruction.
 */
static int64_t varint(const uint8_t *page, size_t *pos, size_t end) {
  uint64_t value = 0;
  for (int i = 0; i < MAX_VARINT_BYTES; i++) {
    if (*pos >= end) return -1;
    uint8_t b = page[(*pos)++];
    value |= (uint64_t)(b & 0x7f) << (7 * i);
    if (b < 0x80) return value <= (uint64_t)MAX_SAFE_INTEGER ? (int64_t)value : -1;
  }
  return -1;
}

/* The little-endian uint32 at p (one load on little-endian CPUs). */
static inline uint32_t le32(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
#else
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

/* A varint whose one-byte form is read inline (as leaf-scan.ts does); -1 as varint(). */
__attribute__((always_inline)) static inline int64_t small_varint(const uint8_t *page, size_t *pos, size_t end) {
  if (*pos < end && page[*pos] < 0x80) return page[(*pos)++];
  return varint(page, pos, end);
}

/* An empty, "." or ".." path segment: key[start, end). */
static inline int bad_segment(const uint8_t *key, size_t start, size_t end) {
  size_t n = end - start;
  return n == 0 || (n <= 2 && key[start] == DOT && (n == 1 || key[start + 1] == DOT));
}

/*
 * key[0, n) as the fatal UTF-8 decoder the reader keys with (formats/bytes.ts utf8Decoder) takes it: 1 when it holds
 * a character past ASCII, 0 when it is ASCII, -1 when it is not UTF-8 (an overlong form, a surrogate, past
 * U+10FFFF, a sequence cut short): then decodePage refuses the page, and names what is wrong.
 */
__attribute__((noinline)) static int utf8_key(const uint8_t *key, size_t n) {
  int wide = 0;
  size_t i = 0;
  while (i < n) {
    uint8_t b = key[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    wide = 1;
    size_t more;
    uint8_t lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (b >= 0xc2 && b <= 0xdf) more = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      more = 2;
      if (b == 0xe0) lo = 0xa0;      /* overlong below */
      else if (b == 0xed) hi = 0x9f; /* surrogates above */
    } else if (b >= 0xf0 && b <= 0xf4) {
      more = 3;
      if (b == 0xf0) lo = 0x90;      /* overlong below */
      else if (b == 0xf4) hi = 0x8f; /* past U+10FFFF above */
    } else return -1;
    if (n - i <= more || key[i + 1] < lo || key[i + 1] > hi) return -1;
    for (size_t k = 2; k <= more; k++) {
      if ((key[i + k] & 0xc0) != 0x80) return -1;
    }
    i += 1 + more;
  }
  return wide;
}

typedef struct {
  double *shard, *offset, *length, *size, *stored, *lone_crc;
  uint32_t *members;
  size_t capacity;
  double *name_start, *name_length, *member_row, *table;
  uint8_t *first_key, *key, *names;
  size_t first_key_cap, key_cap, names_cap, table_rows;
  double *out;
} leaf_out;

/*
 * A member's size, stored size (read only when it is compressed) and CRC32C at *pos, for both of the scan's member
 * loops: 0 when they run past the page.
 */
__attribute__((always_inline)) static inline int member_sizes(const uint8_t *page, size_t *pos, size_t end, uint8_t codec, double *size, double *stored, uint32_t *crc) {
  int64_t size_v = small_varint(page, pos, end);
  if (size_v < 0) return 0;
  *size = (double)size_v;
  *stored = *size;
  if (codec != CODEC_NONE) {
    int64_t stored_v = varint(page, pos, end);
    if (stored_v < 0) return 0;
    *stored = (double)stored_v;
  }
  if (end - *pos < 4) return 0;
  *crc = le32(page + *pos);
  *pos += 4;
  return 1;
}

/* key, ".", ext (the key alone for no ext) at names[*used]: its start there, or -1 when it does not fit in cap. */
static inline double put_name(uint8_t *restrict names, size_t cap, size_t *used, const uint8_t *key, size_t key_length, const uint8_t *ext,
                              size_t ext_length) {
  size_t n = key_length + (ext_length > 0 ? 1 + ext_length : 0);
  if (n > cap - *used) return -1;
  memcpy(names + *used, key, key_length);
  if (ext_length > 0) {
    names[*used + key_length] = DOT;
    memcpy(names + *used + key_length + 1, ext, ext_length);
  }
  double at = (double)*used;
  *used += n;
  return at;
}

/*
 * LeafScan.scan: the record count, or 0 when the page is not a leaf this walk takes (see leaf-scan.ts). Compiled
 * twice: `list_names` a constant, so that the packed layout's scan carries none of the names' bookkeeping, and
 * writes none of their three columns (ten columns a record instead of seven did not stay in the L1 cache: a 10^7-
 * sample verify took 1.35x the time).
 */
__attribute__((always_inline)) static inline uint32_t scan_leaf_body(const uint8_t *restrict page, size_t end, double page_no,
                                                                     const leaf_out *o, const int list_names) {
  if (end < PAGE_HEADER_BYTES) return 0;
  uint32_t own_no = (uint32_t)page[PAGE_NO] | (uint32_t)page[PAGE_NO + 1] << 8 | (uint32_t)page[PAGE_NO + 2] << 16 | (uint32_t)page[PAGE_NO + 3] << 24;
  if (page[PAGE_TYPE] != PAGE_TYPE_LEAF || page[PAGE_FLAGS] != 0 || (double)own_no != page_no) return 0;
  uint32_t count = (uint32_t)page[PAGE_COUNT] | (uint32_t)page[PAGE_COUNT + 1] << 8;
  uint32_t next = (uint32_t)page[PAGE_LINK] | (uint32_t)page[PAGE_LINK + 1] << 8 | (uint32_t)page[PAGE_LINK + 2] << 16 | (uint32_t)page[PAGE_LINK + 3] << 24;
  uint32_t crc = (uint32_t)page[PAGE_CRC] | (uint32_t)page[PAGE_CRC + 1] << 8 | (uint32_t)page[PAGE_CRC + 2] << 16 | (uint32_t)page[PAGE_CRC + 3] << 24;
  if (count == 0 || (next != 0 && (double)next <= page_no)) return 0;
  if (sk_crc32c(sk_crc32c(0, page, PAGE_CRC), page + PAGE_NO, end - PAGE_NO) != crc) return 0;
  if (o->capacity < count) return 0;

  /*
   * The outputs in restrict locals: a store through a uint8_t pointer (a key byte) may alias anything, so through o
   * every pointer and bound would be loaded again after each one (about a quarter of the loop's instructions).
   */
  uint8_t *restrict key = o->key;
  double *restrict shard_out = o->shard, *restrict offset_out = o->offset, *restrict length_out = o->length;
  double *restrict size_out = o->size, *restrict stored_out = o->stored, *restrict lone_crc_out = o->lone_crc;
  uint32_t *restrict members_out = o->members;
  const size_t key_cap = o->key_cap;
  size_t pos = PAGE_HEADER_BYTES, key_length = 0, last_segment = 0, first_key_length = 0;
  int wide_key = 0; /* the key before holds a character past ASCII */
  uint8_t codec_a[MAX_MEMBERS], codec_b[MAX_MEMBERS];
  double gap_a[MAX_MEMBERS], gap_b[MAX_MEMBERS];
  uint8_t *codecs = codec_a, *prev_codecs = codec_b;
  double *gaps = gap_a, *prev_gaps = gap_b;
  /* each member's extension: where it is in the page and its length (the shape's, swapped with codecs and gaps) */
  size_t ext_at_a[MAX_MEMBERS], ext_at_b[MAX_MEMBERS], ext_len_a[MAX_MEMBERS], ext_len_b[MAX_MEMBERS];
  size_t *ext_at = ext_at_a, *prev_ext_at = ext_at_b, *ext_len = ext_len_a, *prev_ext_len = ext_len_b;
  uint8_t *restrict names = o->names;
  double *restrict name_start_out = o->name_start, *restrict name_length_out = o->name_length;
  const size_t names_cap = o->names_cap;
  size_t names_used = 0, rows_used = 0;
  double names_wanted = 0;
  double *restrict member_row_out = o->member_row, *restrict table = o->table;
  const size_t table_rows = o->table_rows;
  /* the record's members: start in the span, stored size, CRC32C (for its rows) */
  double m_start[MAX_MEMBERS], m_stored[MAX_MEMBERS];
  uint32_t m_crc[MAX_MEMBERS];
  uint32_t prev_members = 0, valid_flags = FIRST_RECORD_FLAGS, total_members = 0;
  int lone_shape = 0; /* the shape records take over is one member stored as is */
  double shard = 0, prev_end = 0, total_length = 0, total_size = 0, total_stored = 0, first_shard = -1, max_end = 0;
  int one_shard = 1;
  for (uint32_t i = 0; i < count; i++) {
    /* key: bytes shared with the key before, then the suffix */
    int64_t shared_v = small_varint(page, &pos, end);
    if (shared_v < 0) return 0;
    int64_t suffix_v = small_varint(page, &pos, end);
    if (suffix_v < 0) return 0;
    if ((uint64_t)shared_v > key_length || (uint64_t)suffix_v > end - pos) return 0;
    size_t shared = (size_t)shared_v, suffix = (size_t)suffix_v;
    /* (the first key has key_length 0 before it: an empty one fails bad_segment below) */
    if (suffix == 0 || (shared < key_length && page[pos] <= key[shared])) return 0;
    if (shared + suffix > key_cap) return 0; /* the caller gives room for the longest key a page holds */
    size_t segment = last_segment < shared ? last_segment : shared;
    while (segment > 0 && key[segment - 1] != SLASH) segment--;
    int high = 0; /* a new byte past ASCII */
    for (size_t j = shared; j < shared + suffix; j++) {
      uint8_t b = page[pos++];
      if (__builtin_expect(b >= 0x80 || b == 0 || b == BACKSLASH, 0)) {
        if (b < 0x80) return 0;
        high = 1;
      }
      key[j] = b;
      if (b == SLASH) {
        if (bad_segment(key, segment, j)) return 0;
        segment = j + 1;
      }
    }
    key_length = shared + suffix;
    if (bad_segment(key, segment, key_length)) return 0;
    /* a key past ASCII, or one sharing a prefix with such a key (which may cut a character), is checked whole */
    if (__builtin_expect(high | wide_key, 0)) {
      int w = utf8_key(key, key_length);
      if (w < 0) return 0;
      wide_key = w;
    }
    last_segment = segment;
    if (i == 0) {
      if (key_length > o->first_key_cap) return 0;
      memcpy(o->first_key, key, key_length);
      first_key_length = key_length;
    }

    /* the record: flags, shard and offset, members */
    if (pos >= end) return 0;
    uint8_t flags = page[pos++];
    if (flags > KNOWN_RECORD_FLAGS || ((valid_flags >> flags) & 1) == 0) return 0;
    valid_flags = NEXT_RECORD_FLAGS;
    double offset;
    if ((flags & RECORD_SAME_SHARD) == 0) {
      int64_t shard_v = varint(page, &pos, end);
      int64_t offset_v = varint(page, &pos, end);
      if (shard_v < 0 || offset_v < 0) return 0;
      shard = (double)shard_v;
      offset = (double)offset_v;
      /* (the first record has flags 0: it comes here) */
      if (i == 0) first_shard = shard;
      else if (shard != first_shard) one_shard = 0;
    } else if ((flags & RECORD_CONTIGUOUS) != 0) {
      offset = prev_end;
    } else {
      int64_t z = varint(page, &pos, end);
      if (z < 0) return 0;
      /* zigzag, as JavaScript computes it in doubles (z + 1 <= 2^53 is exact) */
      offset = prev_end + ((z & 1) == 0 ? (double)z / 2 : -((double)z + 1) / 2);
      if (!(offset >= 0 && offset <= MAX_SAFE_INTEGER)) return 0;
    }
    /*
     * The members: a record of the same shape as the one before takes its codecs and gaps (checked then: its first
     * gap is 0, its count in [1, MAX_MEMBERS]; the first record has flags 0), and has only sizes and CRCs here.
     */
    int same_shape = (flags & RECORD_SAME_SHAPE) != 0;
    uint32_t member_count = prev_members;
    double member_end = 0, size = 0, stored = 0;
    uint32_t crc_m = 0;
    if (same_shape) {
      for (uint32_t m = 0; m < member_count; m++) {
        double member_size, stored_size;
        if (!member_sizes(page, &pos, end, prev_codecs[m], &member_size, &stored_size, &crc_m)) return 0;
        if (list_names) {
          m_start[m] = member_end + prev_gaps[m];
          m_stored[m] = stored_size;
          m_crc[m] = crc_m;
        }
        member_end += prev_gaps[m] + stored_size;
        size += member_size;
        stored += stored_size;
      }
    } else {
      int64_t member_count_v = small_varint(page, &pos, end);
      if (member_count_v < 1 || member_count_v > MAX_MEMBERS) return 0;
      member_count = (uint32_t)member_count_v;
      for (uint32_t m = 0; m < member_count; m++) {
        if (pos >= end) return 0;
        uint8_t member_flags = page[pos++];
        uint8_t codec = member_flags & MEMBER_CODEC_MASK;
        if ((member_flags & ~KNOWN_MEMBER_FLAGS) != 0 || (codec != CODEC_NONE && codec != CODEC_LZ4)) return 0;
        if ((member_flags & MEMBER_EXT_SAME) != 0) {
          if (i == 0 || m >= prev_members) return 0;
          if (list_names) {
            ext_at[m] = prev_ext_at[m];
            ext_len[m] = prev_ext_len[m];
          }
        } else {
          /* an extension: UTF-8, with none of "/", a backslash or NUL */
          int64_t n = varint(page, &pos, end);
          if (n < 0 || (uint64_t)n > end - pos) return 0;
          uint8_t high = 0;
          for (size_t j = pos; j < pos + (size_t)n; j++) {
            uint8_t b = page[j];
            if (b == SLASH || b == BACKSLASH || b == 0) return 0;
            high |= b;
          }
          if ((high & 0x80) != 0 && utf8_key(page + pos, (size_t)n) < 0) return 0;
          if (list_names) {
            ext_at[m] = pos;
            ext_len[m] = (size_t)n;
          }
          pos += (size_t)n;
        }
        int64_t gap_v = varint(page, &pos, end);
        if (gap_v < 0) return 0;
        double gap = (double)gap_v;
        codecs[m] = codec;
        gaps[m] = gap;
        double member_size, stored_size;
        if (!member_sizes(page, &pos, end, codec, &member_size, &stored_size, &crc_m)) return 0;
        if (m == 0 && gap != 0) return 0; /* the span starts at its first member */
        if (list_names) {
          m_start[m] = member_end + gap;
          m_stored[m] = stored_size;
          m_crc[m] = crc_m;
        }
        member_end += gap + stored_size;
        size += member_size;
        stored += stored_size;
      }
      /* this record's shape is the one the next records may take over */
      lone_shape = member_count == 1 && codecs[0] == CODEC_NONE;
      uint8_t *c = prev_codecs;
      prev_codecs = codecs;
      codecs = c;
      double *g = prev_gaps;
      prev_gaps = gaps;
      gaps = g;
      if (list_names) {
        size_t *e = prev_ext_at;
        prev_ext_at = ext_at;
        ext_at = e;
        e = prev_ext_len;
        prev_ext_len = ext_len;
        ext_len = e;
      }
    }
    if (!(member_end <= MAX_SAFE_INTEGER)) return 0;
    shard_out[i] = shard;
    offset_out[i] = offset;
    length_out[i] = member_end;
    members_out[i] = member_count;
    size_out[i] = size;
    stored_out[i] = stored;
    lone_crc_out[i] = lone_shape ? (double)crc_m : -1;
    /* the lone member's name (its shape, this record's, is in the prev_ arrays now) */
    double name_at = -1, name_length = 0, row_at = -1;
    if (list_names && lone_shape) {
      size_t n = key_length + (prev_ext_len[0] > 0 ? 1 + prev_ext_len[0] : 0);
      name_at = put_name(names, names_cap, &names_used, key, key_length, page + prev_ext_at[0], prev_ext_len[0]);
      if (name_at >= 0) name_length = (double)n;
      names_wanted += (double)n;
    } else if (list_names) {
      /* several members: rows when all are stored as they are and all their names fit */
      size_t n = 0;
      int stored_all = 1;
      for (uint32_t m = 0; m < member_count; m++) {
        n += key_length + (prev_ext_len[m] > 0 ? 1 + prev_ext_len[m] : 0);
        if (prev_codecs[m] != CODEC_NONE) stored_all = 0;
      }
      if (stored_all) {
        names_wanted += (double)n;
        if (n <= names_cap - names_used && member_count <= table_rows - rows_used) {
          row_at = (double)rows_used;
          for (uint32_t m = 0; m < member_count; m++) {
            double *row = table + (rows_used + m) * ROW_COLUMNS;
            size_t at = names_used;
            row[ROW_NAME_START] = put_name(names, names_cap, &names_used, key, key_length, page + prev_ext_at[m], prev_ext_len[m]);
            row[ROW_NAME_LENGTH] = (double)(names_used - at);
            row[ROW_START] = m_start[m];
            row[ROW_SIZE] = m_stored[m];
            row[ROW_CRC] = (double)m_crc[m];
          }
          rows_used += member_count;
        }
      }
    }
    if (list_names) {
      name_start_out[i] = name_at;
      name_length_out[i] = name_length;
      member_row_out[i] = row_at;
    }
    prev_end = offset + member_end;
    total_members += member_count;
    total_length += member_end;
    total_size += size;
    total_stored += stored;
    if (prev_end > max_end) max_end = prev_end;
    prev_members = member_count;
  }
  double *out = o->out;
  out[OUT_NEXT] = next;
  out[OUT_TOTAL_MEMBERS] = (double)total_members;
  out[OUT_TOTAL_LENGTH] = total_length;
  out[OUT_TOTAL_SIZE] = total_size;
  out[OUT_TOTAL_STORED] = total_stored;
  out[OUT_ONE_SHARD] = one_shard ? first_shard : -1;
  out[OUT_MAX_END] = max_end;
  out[OUT_FIRST_KEY_LENGTH] = (double)first_key_length;
  out[OUT_LAST_KEY_LENGTH] = (double)key_length;
  out[OUT_NAMES_WANTED] = names_wanted;
  return count;
}

#define LEAF_ARGS 6
#define LEAF_NAMES_ARGS 8

/* verifyLeafScan(page, pageNo, records, firstKey, lastKey, out[, names, table]) */
napi_value sk_verify_leaf_scan(napi_env env, napi_callback_info info) {
  size_t argc = LEAF_NAMES_ARGS;
  napi_value argv[LEAF_NAMES_ARGS];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < LEAF_ARGS) return throw_arg(env, "shardkit native: verifyLeafScan needs 6 arguments (8 with names)");
  uint8_t *page;
  size_t page_len, records_len, first_cap, key_cap, names_cap = 0, table_len = 0, out_len;
  double page_no;
  double *records;
  leaf_out o;
  o.names = NULL;
  o.table = NULL;
  if (!typed(env, argv[0], napi_uint8_array, (void **)&page, &page_len) || napi_get_value_double(env, argv[1], &page_no) != napi_ok) {
    return throw_arg(env, "shardkit native: verifyLeafScan needs a page (Uint8Array) and its number");
  }
  if (!typed(env, argv[2], napi_float64_array, (void **)&records, &records_len)) return throw_arg(env, "shardkit native: verifyLeafScan needs a Float64Array for the records");
  if (!typed(env, argv[3], napi_uint8_array, (void **)&o.first_key, &first_cap) || !typed(env, argv[4], napi_uint8_array, (void **)&o.key, &key_cap) ||
      !typed(env, argv[5], napi_float64_array, (void **)&o.out, &out_len) || out_len < LEAF_OUT_COUNT) {
    return throw_arg(env, "shardkit native: verifyLeafScan needs two Uint8Arrays for the keys and a Float64Array out");
  }
  /* names and table only for a walk that lists names: two typed arrays fewer to unwrap a page otherwise */
  if (argc >= LEAF_NAMES_ARGS && (!typed(env, argv[6], napi_uint8_array, (void **)&o.names, &names_cap) || !typed(env, argv[7], napi_float64_array, (void **)&o.table, &table_len))) {
    return throw_arg(env, "shardkit native: verifyLeafScan needs a Uint8Array for the names and a Float64Array for the table");
  }
  o.capacity = records_len / RECORD_ARRAYS;
  o.shard = records + RECORD_SHARD * o.capacity;
  o.offset = records + RECORD_OFFSET * o.capacity;
  o.length = records + RECORD_LENGTH * o.capacity;
  o.size = records + RECORD_SIZE * o.capacity;
  o.stored = records + RECORD_STORED * o.capacity;
  o.lone_crc = records + RECORD_LONE_CRC * o.capacity;
  o.members = (uint32_t *)(records + RECORD_MEMBERS * o.capacity);
  o.name_start = records + RECORD_NAME_START * o.capacity;
  o.name_length = records + RECORD_NAME_LENGTH * o.capacity;
  o.names_cap = names_cap;
  o.member_row = records + RECORD_MEMBER_ROW * o.capacity;
  o.table_rows = table_len / ROW_COLUMNS;
  o.first_key_cap = first_cap;
  o.key_cap = key_cap;
  o.out[OUT_COUNT] = o.names_cap > 0 ? scan_leaf_body(page, page_len, page_no, &o, 1) : scan_leaf_body(page, page_len, page_no, &o, 0);
  return NULL;
}

