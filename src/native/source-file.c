/*
 * Reading one pack source file for the native addon (read-file.c's readFile and readSamples): GNU tar's way (open,
 * fstat, read, fstat, close, the two fstats compared: size, mtime, ctime), or, for a file that last changed seconds
 * before its read on a local file system, open, read, fstat, close (see sk_read_source).
 */
#define _GNU_SOURCE /* O_PATH */
#include "source-file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

static int same_stat(const struct stat *a, const struct stat *b) {
  return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * GNU tar's careful read of an open regular file whose fstat is `before`: the file by its size from byte `from` on
 * (the bytes before it are in dst already, read since `before` held), then a second fstat that must agree with the
 * first (size, mtime, ctime).
 */
static int read_checked(int fd, const struct stat *before, size_t from, uint8_t *dst, size_t room, size_t *size, int *err, int *syscall) {
  if ((*size = (size_t)before->st_size) > room) return RS_ROOM;
  size_t done = from;
  while (done < *size) {
    ssize_t n = pread(fd, dst + done, *size - done, (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      *syscall = SC_READ;
      return RS_ERRNO;
    }
    if (n == 0) return RS_CHANGED;
    done += (size_t)n;
  }
  struct stat after;
  if (fstat(fd, &after) != 0) {
    *err = errno;
    *syscall = SC_FSTAT;
    return RS_ERRNO;
  }
  return same_stat(before, &after) ? RS_OK : RS_CHANGED;
}

/*
 * The directory of the files being read, open (O_PATH), so that each file is opened by its name in it: the kernel
 * resolves one path component per file instead of all of them (a task's files mostly share a directory).
 */
#ifdef O_PATH
#define DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)
#else
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#endif

/*
 * File systems whose ctime sk_read_source may trust (see there): local ones that keep it in the kernel, with
 * nanoseconds. Not NFS, SMB, 9p or virtiofs (the server's clock), FUSE (sshfs reports mtime, which a writer can set
 * back), vfat (ctime is mtime, to 2 s), overlayfs or anything else: those files get tar's two fstats.
 */
static int ctime_trusted(long f_type) {
  switch ((unsigned long)f_type & 0xffffffffUL) {
    case 0xEF53UL: /* ext2/3/4: a file whose ctime has no nanoseconds (128-byte inodes) is taken carefully */
    case 0x58465342UL: /* xfs */
    case 0x9123683EUL: /* btrfs */
    case 0x01021994UL: /* tmpfs */
      return 1;
    default:
      return 0;
  }
}

/* The directory to open `*path` in, advancing `*path` to the name in it; AT_FDCWD (path unchanged) when none. */
int sk_dir_of(sk_dir_cache *c, const char **path, size_t path_len) {
  const char *slash = *path + path_len;
  while (slash > *path && *slash != '/') slash--;
  if (slash == *path || path_len == 0 || slash[1] == 0) return AT_FDCWD;
  size_t len = (size_t)(slash - *path);
  if (len >= PATH_BYTES) return AT_FDCWD;
  if (c->fd < 0 || c->len != len || memcmp(c->path, *path, len) != 0) {
    if (c->fd >= 0) close(c->fd);
    memcpy(c->path, *path, len);
    c->path[len] = 0;
    c->len = len;
    c->fd = open(c->path, DIR_FLAGS);
    // the file's own open then reports what is wrong (ENOENT, EACCES, ...), as without the cache
    if (c->fd < 0) return AT_FDCWD;
    struct statfs fs;
    struct stat st;
    c->trusted = fstatfs(c->fd, &fs) == 0 && ctime_trusted((long)fs.f_type) && fstat(c->fd, &st) == 0;
    if (c->trusted) c->dev = st.st_dev;
  }
  *path = slash + 1;
  return c->fd;
}

/* The first read of a file in a trusted directory asks for at most this much (the room, when smaller). */
#define FIRST_READ_MAX ((size_t)128 << 10)
/* How long before a read began a file must have last changed for the read to need one fstat (see sk_read_source). */
#define SETTLED_NS 2000000000LL
/* How far CLOCK_REALTIME may fall behind CLOCK_MONOTONIC during a read before it counts as a step back. */
#define CLOCK_SLACK_NS 100000000LL

static long long ns_of(const struct timespec *t) { return (long long)t->tv_sec * 1000000000LL + t->tv_nsec; }

/*
 * open, fstat, read, fstat, close of `path` (relative to directory `dir`, or AT_FDCWD) into dst[0, room), as GNU
 * tar reads: RS_OK with *size; RS_ROOM with *size when the file is larger than room; RS_ERRNO with *err and
 * *syscall; RS_NOT_FILE; RS_CHANGED. `in` (or NULL) is the directory's cache entry when `dir` is its descriptor.
 *
 * In a directory whose file system keeps ctime in the kernel with nanoseconds (ctime_trusted), one fstat: open,
 * read, fstat, close. The file is read first (up to FIRST_READ_MAX), then the fstat must show a regular file on
 * the directory's device whose ctime (with nanoseconds) and mtime are over SETTLED_NS older than the read's start,
 * by a clock that did not step back meanwhile (CLOCK_REALTIME kept up with CLOCK_MONOTONIC). The kernel sets ctime
 * to the time of every change to a file and nobody can set it back, so such a file did not change while it was
 * read; the read is whole when it got the fstat's size, and a larger file is read on with that fstat as tar's
 * first. Any other file (one changed in the last seconds, a clock step) is read again from its start as tar reads.
 * dst[0, room) may then be written whatever the outcome (it is the caller's free room); nothing outside it is.
 * A pack of 100k small files took 0.96x the time (9 alternated rounds).
 */
int sk_read_source(int dir, const sk_dir_cache *in, const char *path, uint8_t *dst, size_t room, size_t *size, int *err, int *syscall) {
  int trusted = in != NULL && in->fd == dir && in->trusted;
  struct timespec real0, mono0, real1, mono1;
  if (trusted) {
    clock_gettime(CLOCK_REALTIME, &real0);
    clock_gettime(CLOCK_MONOTONIC, &mono0);
  }
  // O_NONBLOCK: a FIFO swapped in for a listed file must not block the pack (fstat then says it is not a file)
  int fd = openat(dir, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *err = errno;
    *syscall = SC_OPEN;
    return RS_ERRNO;
  }
  ssize_t n = 0;
  int read_errno = 0;
  if (trusted) {
    do n = pread(fd, dst, room < FIRST_READ_MAX ? room : FIRST_READ_MAX, 0);
    while (n < 0 && errno == EINTR);
    read_errno = errno;
  }
  struct stat st;
  int status;
  if (fstat(fd, &st) != 0) {
    *err = errno;
    *syscall = SC_FSTAT;
    status = RS_ERRNO;
  } else if (!S_ISREG(st.st_mode)) {
    status = RS_NOT_FILE; /* a directory's EISDIR, a FIFO's ESPIPE: it is not a file */
  } else if (n < 0) {
    *err = read_errno;
    *syscall = SC_READ;
    status = RS_ERRNO;
  } else {
    int settled = 0;
    if (trusted) {
      clock_gettime(CLOCK_REALTIME, &real1);
      clock_gettime(CLOCK_MONOTONIC, &mono1);
      long long before = ns_of(&real0) - SETTLED_NS;
      settled = st.st_dev == in->dev && st.st_ctim.tv_nsec != 0 && ns_of(&st.st_ctim) < before && ns_of(&st.st_mtim) < before &&
                ns_of(&real1) - ns_of(&real0) >= ns_of(&mono1) - ns_of(&mono0) - CLOCK_SLACK_NS;
    }
    if (settled && (off_t)n == st.st_size) {
      *size = (size_t)n;
      status = RS_OK;
    } else {
      status = read_checked(fd, &st, settled && (off_t)n < st.st_size ? (size_t)n : 0, dst, room, size, err, syscall);
    }
  }
  close(fd);
  return status;
}
