/* Compiled twin of one partition dir's listing + summary (pure Python: backends/local.py `_scan` followed by
 * kafka/dir_summary.py `summarize_entries`), and of a whole log dir's format-2 inventory columns.
 *
 * scan_dir(path: str, tails: tuple[tuple[bytes, int], ...], reads: tuple[bytes, ...], read_limit: int,
 *          parent_fd: int = -1, name: str = None) -> tuple | None
 *
 * Lists `path` (opened as `name` under the open directory `parent_fd` when both are given: no walk of the whole
 * path per directory) and stats each entry with one fstatat, following symbolic links exactly as os.DirEntry.stat()
 * does (lstat for entries that are not links, stat for links). Kafka semantics stay in Python: `tails` maps what a
 * segment file name has after its 20 digits to a code (SEG_* below, built from segment_files._SEGMENT_TAILS), and
 * `reads` names the small files whose content is read in the same pass (regular files of at most `read_limit` bytes,
 * kept only when one read returns exactly the size the fstatat saw; anything else just leaves the content out, and
 * Python then reads the file itself and reports why).
 *
 * Returns None when the directory needs the Python path (a name that is not valid UTF-8 -- Python sorts
 * surrogate-escaped names by code point, not by byte --, a 20-digit offset above 2^63-1, a time out of int64 ns).
 * Raises OSError (filename = path) when the directory cannot be opened or read, like os.scandir.
 * Otherwise returns (files, bytes, log_bytes, index_bytes, log_count, log_min, log_max, index_sets, orphan_sets,
 * transient, oldest_ns, newest_ns, fingerprint_text, others, errors, contents) where
 *   others:   [(name, kind, size, mtime_ns, islink: bool)] for every entry that is not segment-shaped (kind 0 file,
 *             1 directory, 2 other), in listing order;
 *   errors:   [(name, errno, islink: bool)] for entries whose stat failed (listed as kind 2, size 0, mtime 0);
 *   contents: {name: bytes} for the `reads` files read here.
 *
 * inventory_columns(root: str, url: str, d: int, tails, root_reads, reads, read_limit: int, reader) -> tuple | None
 *
 * One log dir of a format-2 inventory (pipelines/crawl/inventory_parquet.py, whose `add_listing` / `add_unlisted`
 * over the local backend's `list_log_dir(root, summarize=True)` is the reference): lists `root` and each of its
 * directories as scan_dir does, sums the partition dirs up (sha256 fingerprint included) and encodes the rows
 * straight into Parquet page bodies, one per leaf column of `arrow_schema()` (plain encoding, RLE levels), with no
 * Python object per file or per partition dir. `reader(path)` is called for a small file this pass could not read
 * in one go (larger than `read_limit`, changed, not a regular file, unreadable): it returns the bytes, or
 * (error_class, reason) to record. Returns None when the log dir needs the Python path (what scan_dir returns None
 * for, or a root or url that is not valid UTF-8); else (rows, [(page_body, num_values)] per leaf column, reason)
 * where reason is None, or why the log dir could not be listed (then its one row records the error).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

enum { SEG_TRANSIENT = 0, SEG_LOG = 1, SEG_INDEX = 2, SEG_OTHER = 3 };
enum { KIND_FILE = 0, KIND_DIR = 1, KIND_OTHER = 2 };
#define DIGITS 20
#define MAX_TAILS 64

typedef struct {
    const char *key; /* name, plus "/" for directories (the fingerprint's sort key); set once keys stop moving */
    size_t key_off, key_len; /* where in Scan.keys */
    long long size;
    long long mtime_s; /* whole seconds (floor), what the fingerprint counts */
} FpItem;

typedef struct {
    const char *bytes[MAX_TAILS];
    Py_ssize_t len[MAX_TAILS];
    int code[MAX_TAILS];
    int n;
} Tails;

/* A growable byte buffer. */
typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap2 = b->cap ? b->cap * 2 : 256;
    while (cap2 < b->len + more) cap2 *= 2;
    char *p = realloc(b->p, cap2);
    if (!p) return -1;
    b->p = p;
    b->cap = cap2;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

static int buf_byte(Buf *b, unsigned char c) {
    if (b->len == b->cap && buf_reserve(b, 1) < 0) return -1;
    b->p[b->len++] = (char)c;
    return 0;
}

/* Grow `*arr` (of `*cap` items of `size` bytes) to hold one more than `n`. */
static int grow(void **arr, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return 0;
    size_t cap2 = *cap ? *cap * 2 : 32;
    void *p = realloc(*arr, cap2 * size);
    if (!p) return -1;
    *arr = p;
    *cap = cap2;
    return 0;
}

static int push_ll(long long **arr, size_t *n, size_t *cap, long long v) {
    if (grow((void **)arr, *n, cap, sizeof **arr) < 0) return -1;
    (*arr)[(*n)++] = v;
    return 0;
}

/* An entry kept in `others` (not segment-shaped). */
typedef struct {
    size_t name_off, name_len; /* in Scan.names, NUL-terminated there */
    int kind, islink;
    long long size, mtime_ns;
    long long data_off, data_len; /* in Scan.data; data_len -1: not read here */
} Other;

/* An entry whose stat failed. */
typedef struct {
    size_t name_off, name_len;
    int err, islink;
} Failed;

/* One directory listed and summed up; reused from one directory to the next (scan_reset). */
typedef struct {
    long long files, total, log_bytes, index_bytes, transient, oldest, newest, index_sets, orphans;
    int os_errno; /* when scan_core returns SCAN_OSERROR */
    Buf names, data, text; /* text: the fingerprint text */
    Other *others;
    size_t n_others, cap_others;
    Failed *errs;
    size_t n_errs, cap_errs;
    FpItem *items;
    size_t n_items, cap_items;
    Buf keys;
    long long *logs, *idx;
    size_t n_logs, cap_logs, n_idx, cap_idx;
} Scan;

enum { SCAN_OK = 0, SCAN_FALLBACK = 1, SCAN_OSERROR = -1, SCAN_PYERROR = -2 };

static void scan_reset(Scan *s) {
    s->files = s->total = s->log_bytes = s->index_bytes = s->transient = s->oldest = s->newest = 0;
    s->index_sets = s->orphans = 0;
    s->os_errno = 0;
    s->names.len = s->data.len = s->text.len = s->keys.len = 0;
    s->n_others = s->n_errs = s->n_items = s->n_logs = s->n_idx = 0;
}

static void scan_free(Scan *s) {
    free(s->names.p);
    free(s->data.p);
    free(s->text.p);
    free(s->others);
    free(s->errs);
    free(s->items);
    free(s->keys.p);
    free(s->logs);
    free(s->idx);
}

static const char *scan_name(const Scan *s, size_t off) { return s->names.p + off; }

static int is_ascii(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] & 0x80) return 0;
    return 1;
}

static int cmp_item(const void *a, const void *b) {
    const FpItem *x = a, *y = b;
    size_t m = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, m);
    if (c) return c;
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Decimal text of `v` at `dst` (what "%lld" prints, without the terminating NUL); returns its length. */
static size_t put_ll(char *dst, long long v) {
    char tmp[20];
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    size_t n = 0, len = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) dst[len++] = '-';
    while (n) dst[len++] = tmp[--n];
    return len;
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* The last `tails` tuple and its parsed form: callers pass the same tuple every time, so it is parsed once
   (the reference held here keeps the tuple, and so the bytes the parsed form points into, alive). */
static PyObject *cached_tails_obj = NULL;
static Tails cached_tails;

static int parse_tails(PyObject *seq, Tails *t) {
    PyObject *fast = PySequence_Fast(seq, "tails must be a sequence");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_TAILS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "too many tails");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        PyObject *key;
        int code;
        if (!PyArg_ParseTuple(pair, "Si", &key, &code)) {
            Py_DECREF(fast);
            return -1;
        }
        t->bytes[i] = PyBytes_AS_STRING(key); /* borrowed: the caller's tuple keeps it alive */
        t->len[i] = PyBytes_GET_SIZE(key);
        t->code[i] = code;
    }
    t->n = (int)n;
    Py_DECREF(fast);
    return 0;
}

/* Segment code of `name`, or -1 when it is not `<20 ASCII digits><tail>`; *offset set (-2 on overflow). */
static int segment_code(const Tails *t, const char *name, size_t len, long long *offset) {
    if (len < DIGITS) return -1;
    unsigned long long v = 0;
    int overflow = 0;
    for (int i = 0; i < DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        unsigned d = (unsigned)(name[i] - '0');
        if (v > (9223372036854775807ULL - d) / 10) overflow = 1;
        else v = v * 10 + d;
    }
    for (int i = 0; i < t->n; i++) {
        if ((size_t)t->len[i] == len - DIGITS && memcmp(t->bytes[i], name + DIGITS, len - DIGITS) == 0) {
            *offset = overflow ? -2 : (long long)v;
            return t->code[i];
        }
    }
    return -1;
}

/* Directory entries, read with getdents64 on Linux (opendir would fstat the directory first), readdir elsewhere. */
typedef struct {
#ifdef __linux__
    int fd;
    long pos, len;
    char buf[32768];
#else
    DIR *dir;
#endif
} DirReader;

typedef struct {
    const char *name;
    unsigned char type; /* DT_* */
} DirItem;

#ifdef __linux__
struct linux_dirent64_ {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int dir_open(DirReader *r, int fd) {
    r->fd = fd;
    r->pos = r->len = 0;
    return 0;
}

/* 1 and *item set, 0 at the end, -1 with errno set. */
static int dir_next(DirReader *r, DirItem *item) {
    if (r->pos >= r->len) {
        long n = syscall(SYS_getdents64, r->fd, r->buf, sizeof r->buf);
        if (n < 0) return -1;
        if (n == 0) return 0;
        r->pos = 0;
        r->len = n;
    }
    struct linux_dirent64_ *d = (struct linux_dirent64_ *)(r->buf + r->pos);
    r->pos += d->d_reclen;
    item->name = d->d_name;
    item->type = d->d_type;
    return 1;
}

static int dir_fd(DirReader *r) { return r->fd; }
static void dir_close(DirReader *r) { close(r->fd); }
#else
static int dir_open(DirReader *r, int fd) {
    r->dir = fdopendir(fd);
    if (!r->dir) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return 0;
}

static int dir_next(DirReader *r, DirItem *item) {
    errno = 0;
    struct dirent *de = readdir(r->dir);
    if (!de) return errno ? -1 : 0;
    item->name = de->d_name;
    item->type = de->d_type;
    return 1;
}

static int dir_fd(DirReader *r) { return dirfd(r->dir); }
static void dir_close(DirReader *r) { closedir(r->dir); }
#endif

/* Read the whole content of a regular file of `size` bytes (when it was stat'ed) into s->data: its place in
   *off / *len, or *len -1 (no error raised). One read of size + 1 bytes must return exactly `size` bytes. Anything
   else (the file changed, or is no longer a regular file; O_NONBLOCK keeps a FIFO from blocking) leaves the file to
   Python, which reads it itself. read_small opens `name` first (no fstat: the fstatat of the listing saw it). */
static void read_fd(Scan *s, int fd, long long size, long long limit, long long *off, long long *len) {
    *len = -1;
    if (size < 0 || size > limit) return;
    size_t want = (size_t)size + 1;
    if (buf_reserve(&s->data, want) < 0) return;
    ssize_t got;
    do {
        got = read(fd, s->data.p + s->data.len, want);
    } while (got < 0 && errno == EINTR);
    if (got == (ssize_t)size) {
        *off = (long long)s->data.len;
        *len = size;
        s->data.len += (size_t)size;
    }
}

static void read_small(Scan *s, int dfd, const char *name, long long size, long long limit, Other *o) {
    o->data_len = -1;
    if (size < 0 || size > limit) return;
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return;
    read_fd(s, fd, size, limit, &o->data_off, &o->data_len);
    close(fd);
}

static int is_wanted(PyObject *reads, const char *name, size_t len) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(reads); i++) {
        PyObject *want = PyTuple_GET_ITEM(reads, i);
        if (PyBytes_Check(want) && (size_t)PyBytes_GET_SIZE(want) == len && memcmp(PyBytes_AS_STRING(want), name, len) == 0)
            return 1;
    }
    return 0;
}

/* Names kept in s->names, NUL-terminated; returns the offset or (size_t)-1. */
static size_t keep_name(Scan *s, const char *name, size_t len) {
    size_t off = s->names.len;
    if (buf_put(&s->names, name, len) < 0 || buf_byte(&s->names, 0) < 0) return (size_t)-1;
    return off;
}

/* List the directory `open_path` (under `parent_fd`, or AT_FDCWD) into `s` (reset first). SCAN_OSERROR: it could not
   be opened or read (s->os_errno); SCAN_FALLBACK: it needs the Python path; SCAN_PYERROR: a Python error is set. */
static int scan_core(Scan *s, int parent_fd, const char *open_path, const Tails *tails, PyObject *reads,
                     long long read_limit) {
    scan_reset(s);
    int fd = openat(parent_fd, open_path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    DirReader dir;
    if (fd < 0 || dir_open(&dir, fd) < 0) {
        s->os_errno = errno;
        return SCAN_OSERROR;
    }
    int dfd = dir_fd(&dir);
    int rc = SCAN_OK;

    for (;;) {
        DirItem de;
        int more = dir_next(&dir, &de);
        if (more < 0) {
            s->os_errno = errno;
            rc = SCAN_OSERROR;
            goto done;
        }
        if (!more) break;
        const char *name = de.name;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        size_t len = strlen(name);
        if (!is_ascii(name, len)) { /* strict UTF-8, else Python's order (surrogate escapes) differs from bytes */
            PyObject *check = PyUnicode_DecodeUTF8(name, (Py_ssize_t)len, NULL);
            if (!check) {
                PyErr_Clear();
                rc = SCAN_FALLBACK;
                goto done;
            }
            Py_DECREF(check);
        }

        /* stat like os.DirEntry: is_symlink from d_type (lstat when unknown), then stat() follows links */
        struct stat st;
        int islink = de.type == DT_LNK, err = 0, opened = 0;
        long long data_off = 0, data_len = -1; /* a small file's content, read on the way */
        if (de.type == DT_REG && is_wanted(reads, name, len)) {
            /* a small file to read that is no link: open it, then fstat the open file (one path lookup less than
               fstatat + openat; d_type says regular file, and O_NOFOLLOW refuses a link swapped in since) */
            int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) {
                if (fstat(fd, &st) == 0) {
                    opened = 1;
                    if (S_ISREG(st.st_mode)) read_fd(s, fd, (long long)st.st_size, read_limit, &data_off, &data_len);
                }
                close(fd);
            }
        }
        if (!opened) { /* (an open that failed: the fstatat says why, or the file is read by Python) */
            if (de.type == DT_UNKNOWN) {
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) islink = S_ISLNK(st.st_mode);
            }
            if (fstatat(dfd, name, &st, islink ? 0 : AT_SYMLINK_NOFOLLOW) != 0) err = errno;
        }
        int kind = KIND_OTHER;
        long long size = 0, mtime_ns = 0, mtime_s = 0;
        if (!err) {
            if (S_ISREG(st.st_mode)) {
                kind = KIND_FILE;
                size = (long long)st.st_size;
            } else if (S_ISDIR(st.st_mode)) {
                kind = KIND_DIR;
            }
            long long sec = (long long)st.st_mtim.tv_sec;
            if (sec > INT64_MAX / 1000000000LL - 1 || sec < INT64_MIN / 1000000000LL + 1) {
                rc = SCAN_FALLBACK;
                goto done;
            }
            mtime_s = sec;
            mtime_ns = sec * 1000000000LL + (long long)st.st_mtim.tv_nsec;
        } else {
            islink = err == ENOENT && islink; /* only a broken link keeps its link flag */
            if (grow((void **)&s->errs, s->n_errs, &s->cap_errs, sizeof *s->errs) < 0) goto nomem;
            size_t off = keep_name(s, name, len);
            if (off == (size_t)-1) goto nomem;
            s->errs[s->n_errs++] = (Failed){off, len, err, islink};
        }

        /* fingerprint item */
        if (grow((void **)&s->items, s->n_items, &s->cap_items, sizeof *s->items) < 0) goto nomem;
        FpItem *it = &s->items[s->n_items];
        it->key_len = len + (kind == KIND_DIR);
        it->key_off = s->keys.len;
        if (buf_put(&s->keys, name, len) < 0) goto nomem;
        if (kind == KIND_DIR && buf_byte(&s->keys, '/') < 0) goto nomem;
        it->size = size;
        it->mtime_s = mtime_s;
        s->n_items++;

        int code = -1;
        long long offset = 0;
        if (kind != KIND_DIR) {
            s->files++;
            s->total += size;
            if (mtime_ns > 0) {
                if (!s->oldest || mtime_ns < s->oldest) s->oldest = mtime_ns;
                if (mtime_ns > s->newest) s->newest = mtime_ns;
            }
            code = segment_code(tails, name, len, &offset);
            if (code >= 0 && offset == -2) {
                rc = SCAN_FALLBACK;
                goto done;
            }
        }
        if (code == SEG_TRANSIENT) {
            s->transient++;
        } else if (code == SEG_LOG) {
            s->log_bytes += size;
            if (push_ll(&s->logs, &s->n_logs, &s->cap_logs, offset) < 0) goto nomem;
        } else if (code == SEG_INDEX) {
            s->index_bytes += size;
            if (push_ll(&s->idx, &s->n_idx, &s->cap_idx, offset) < 0) goto nomem;
        } else if (code < 0) {
            if (grow((void **)&s->others, s->n_others, &s->cap_others, sizeof *s->others) < 0) goto nomem;
            Other *o = &s->others[s->n_others];
            o->name_off = keep_name(s, name, len);
            if (o->name_off == (size_t)-1) goto nomem;
            o->name_len = len;
            o->kind = kind;
            o->islink = islink;
            o->size = size;
            o->mtime_ns = mtime_ns;
            o->data_off = 0;
            o->data_len = -1;
            if (opened) {
                o->data_off = data_off;
                o->data_len = data_len;
            } else if (kind == KIND_FILE && is_wanted(reads, name, len)) {
                read_small(s, dfd, name, size, read_limit, o);
            }
            s->n_others++;
        }
    }

    /* index offsets (distinct) and how many of them have no .log */
    qsort(s->logs, s->n_logs, sizeof *s->logs, cmp_ll);
    qsort(s->idx, s->n_idx, sizeof *s->idx, cmp_ll);
    for (size_t i = 0, j = 0; i < s->n_idx; i++) {
        if (i && s->idx[i] == s->idx[i - 1]) continue;
        s->index_sets++;
        while (j < s->n_logs && s->logs[j] < s->idx[i]) j++;
        if (j == s->n_logs || s->logs[j] != s->idx[i]) s->orphans++;
    }

    /* fingerprint text: "name\0size\0seconds\n" per entry, sorted by name ("/" appended for directories) */
    for (size_t i = 0; i < s->n_items; i++) s->items[i].key = s->keys.p + s->items[i].key_off;
    qsort(s->items, s->n_items, sizeof *s->items, cmp_item);
    size_t text_len = 0;
    for (size_t i = 0; i < s->n_items; i++) text_len += s->items[i].key_len + 2 * 20 + 3; /* 2 numbers (<= 20 chars), 2 separators, newline */
    if (buf_reserve(&s->text, text_len + 1) < 0) goto nomem;
    char *text = s->text.p;
    size_t pos = 0;
    for (size_t i = 0; i < s->n_items; i++) {
        FpItem *it = &s->items[i];
        memcpy(text + pos, it->key, it->key_len);
        pos += it->key_len;
        text[pos++] = '\0';
        pos += put_ll(text + pos, it->size); /* at most 19 digits and a sign */
        text[pos++] = '\0';
        pos += put_ll(text + pos, it->mtime_s);
        text[pos++] = '\n';
    }
    s->text.len = pos;
    goto done;

nomem:
    PyErr_NoMemory();
    rc = SCAN_PYERROR;
done:
    dir_close(&dir);
    return rc;
}

/* -- scan_dir ------------------------------------------------------------------------------------------------- */

/* The tails tuple parsed, from the cache when it is the last one seen. */
static int get_tails(PyObject *tails_obj, Tails *tails) {
    if (tails_obj == cached_tails_obj) {
        *tails = cached_tails;
        return 0;
    }
    if (parse_tails(tails_obj, tails) < 0) return -1;
    if (PyTuple_CheckExact(tails_obj)) { /* immutable: safe to reuse while we hold it */
        Py_INCREF(tails_obj);
        Py_XSETREF(cached_tails_obj, tails_obj);
        cached_tails = *tails;
    }
    return 0;
}

static PyObject *scan_result(const Scan *s) {
    PyObject *others = PyList_New((Py_ssize_t)s->n_others), *errors = PyList_New((Py_ssize_t)s->n_errs);
    PyObject *contents = PyDict_New(), *fp = NULL, *log_min = NULL, *log_max = NULL;
    if (!others || !errors || !contents) goto fail;
    for (size_t i = 0; i < s->n_others; i++) {
        const Other *o = &s->others[i];
        const char *name = scan_name(s, o->name_off);
        PyObject *t = Py_BuildValue("(s#iLLN)", name, (Py_ssize_t)o->name_len, o->kind, o->size, o->mtime_ns,
                                    PyBool_FromLong(o->islink));
        if (!t) goto fail;
        PyList_SET_ITEM(others, (Py_ssize_t)i, t);
        if (o->data_len >= 0) {
            PyObject *key = PyUnicode_DecodeUTF8(name, (Py_ssize_t)o->name_len, NULL);
            PyObject *data = key ? PyBytes_FromStringAndSize(s->data.p + o->data_off, (Py_ssize_t)o->data_len) : NULL;
            int rc = data ? PyDict_SetItem(contents, key, data) : -1;
            Py_XDECREF(key);
            Py_XDECREF(data);
            if (rc < 0) goto fail;
        }
    }
    for (size_t i = 0; i < s->n_errs; i++) {
        const Failed *f = &s->errs[i];
        PyObject *t = Py_BuildValue("(s#iN)", scan_name(s, f->name_off), (Py_ssize_t)f->name_len, f->err,
                                    PyBool_FromLong(f->islink));
        if (!t) goto fail;
        PyList_SET_ITEM(errors, (Py_ssize_t)i, t);
    }
    fp = PyBytes_FromStringAndSize(s->text.p ? s->text.p : "", (Py_ssize_t)s->text.len);
    if (!fp) goto fail;
    if (s->n_logs) {
        log_min = PyLong_FromLongLong(s->logs[0]);
        log_max = PyLong_FromLongLong(s->logs[s->n_logs - 1]);
        if (!log_min || !log_max) goto fail;
    } else {
        log_min = Py_NewRef(Py_None);
        log_max = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(LLLLnNNLLLLLNNNN)", s->files, s->total, s->log_bytes, s->index_bytes, (Py_ssize_t)s->n_logs,
                         log_min, log_max, s->index_sets, s->orphans, s->transient, s->oldest, s->newest, fp, others,
                         errors, contents);
fail:
    Py_XDECREF(others);
    Py_XDECREF(errors);
    Py_XDECREF(contents);
    Py_XDECREF(fp);
    Py_XDECREF(log_min);
    Py_XDECREF(log_max);
    return NULL;
}

static PyObject *scan_dir(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj, *tails_obj, *reads_obj, *name_obj = NULL;
    long long read_limit;
    int parent_fd = -1;
    if (!PyArg_ParseTuple(args, "UOO!L|iU", &path_obj, &tails_obj, &PyTuple_Type, &reads_obj, &read_limit, &parent_fd,
                          &name_obj))
        return NULL;
    Tails tails;
    if (get_tails(tails_obj, &tails) < 0) return NULL;
    /* open `name` under `parent_fd` when given (no walk of the whole path), else `path` */
    int relative = parent_fd >= 0 && name_obj != NULL;
    PyObject *open_bytes = PyUnicode_EncodeFSDefault(relative ? name_obj : path_obj);
    if (!open_bytes) return NULL;
    Scan s = {0};
    int rc = scan_core(&s, relative ? parent_fd : AT_FDCWD, PyBytes_AS_STRING(open_bytes), &tails, reads_obj,
                       read_limit);
    Py_DECREF(open_bytes);
    PyObject *result = NULL;
    if (rc == SCAN_OK) {
        result = scan_result(&s);
    } else if (rc == SCAN_OSERROR) {
        errno = s.os_errno;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_obj);
    } else if (rc == SCAN_FALLBACK) {
        result = Py_NewRef(Py_None);
    }
    scan_free(&s);
    return result;
}

/* -- SHA-256 (FIPS 180-4), for the fingerprint: hashlib.sha256(text).hexdigest() ---------------------------------- */

static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

static void sha_blocks_c(uint32_t h[8], const unsigned char *p, size_t blocks) {
    for (size_t i = 0; i < blocks; i++) sha_block(h, p + 64 * i);
}

#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5))
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHA_NI 1

/* The same blocks with the x86 SHA extensions (the message schedule and two rounds per instruction). */
__attribute__((target("sha,ssse3,sse4.1"))) static void sha_blocks_ni(uint32_t h[8], const unsigned char *p,
                                                                      size_t blocks) {
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0); /* CDGH */
    for (; blocks; blocks--, p += 64) {
        __m128i abef = state0, cdgh = state1, w[4];
        for (int i = 0; i < 16; i++) {
            if (i < 4) {
                w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), mask);
            } else { /* w[i] from w[i-4], w[i-3], w[i-2], w[i-1] (ring of four) */
                __m128i x = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
                w[i & 3] = _mm_sha256msg2_epu32(x, w[(i + 3) & 3]);
            }
            __m128i msg = _mm_add_epi32(w[i & 3], _mm_loadu_si128((const __m128i *)&SHA_K[4 * i]));
            state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
            state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
        }
        state0 = _mm_add_epi32(state0, abef);
        state1 = _mm_add_epi32(state1, cdgh);
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B); /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1); /* DCHG */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(tmp, state1, 0xF0)); /* DCBA */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(state1, tmp, 8)); /* HGFE */
}

static int cpu_has_sha_ni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19))) return 0; /* SSSE3, SSE4.1 */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 29) & 1; /* SHA */
}
#endif

static void (*sha_blocks)(uint32_t h[8], const unsigned char *p, size_t blocks) = sha_blocks_c;

/* The 64 lower-case hex digits of sha256(data) at `hex` (no NUL). */
static void sha256_hex(const unsigned char *data, size_t len, char hex[64]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    size_t full = len / 64 * 64;
    if (full) sha_blocks(h, data, full / 64);
    unsigned char tail[128] = {0};
    size_t rest = len - full;
    if (rest) memcpy(tail, data + full, rest);
    tail[rest] = 0x80;
    size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha_blocks(h, tail, tail_len / 64);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            unsigned char byte = (unsigned char)(h[i] >> (24 - 8 * j));
            hex[8 * i + 2 * j] = digits[byte >> 4];
            hex[8 * i + 2 * j + 1] = digits[byte & 15];
        }
}

/* -- inventory_columns ------------------------------------------------------------------------------------------ */

/* Leaf columns of inventory_parquet.arrow_schema(), in order; the last ten are the list<struct> columns' fields. */
enum {
    C_T, C_D, C_NAME, C_KIND, C_SIZE, C_MTIME, C_ISLINK, C_FS_TOTAL, C_FS_USED, C_FS_FREE, C_STAGE, C_ERROR_CLASS,
    C_REASON, C_DATA, C_FILES, C_BYTES, C_LOG_BYTES, C_INDEX_BYTES, C_SEGMENTS, C_MIN_OFFSET, C_MAX_OFFSET,
    C_INDEX_SETS, C_ORPHANS, C_TRANSIENT, C_OLDEST, C_NEWEST, C_FINGERPRINT, /* top level: N_TOP */
    C_O_NAME, C_O_KIND, C_O_SIZE, C_O_MTIME, C_O_ISLINK, C_C_NAME, C_C_DATA, C_R_NAME, C_R_CLASS, C_R_REASON, N_COLS
};
#define N_TOP C_O_NAME
enum { P_BYTES, P_I32, P_I64, P_BOOL, P_DEC }; /* physical type, plain encoding (P_DEC: fixed 9 bytes) */
static const unsigned char COL_TYPE[N_COLS] = {
    P_BYTES, P_I32, P_BYTES, P_I32, P_I64, P_I64, P_BOOL, P_I64, P_I64, P_I64, P_BYTES, P_BYTES, P_BYTES, P_BYTES,
    P_I64, P_I64, P_I64, P_I64, P_I64, P_DEC, P_DEC, P_I64, P_I64, P_I64, P_I64, P_I64, P_BYTES,
    P_BYTES, P_I32, P_I64, P_I64, P_BOOL, P_BYTES, P_BYTES, P_BYTES, P_BYTES, P_BYTES,
};
#define NESTED_DEF 4 /* list present, list not empty, element present, value present */

typedef struct {
    Buf def, rep, val; /* one byte per level; plain-encoded values (booleans one byte each until encoded) */
} Col;

typedef struct {
    Col cols[N_COLS];
} Table;

typedef struct {
    int set;
    long long i;
    const char *s;
    size_t len;
} Val;

static void table_free(Table *t) {
    for (int c = 0; c < N_COLS; c++) {
        free(t->cols[c].def.p);
        free(t->cols[c].rep.p);
        free(t->cols[c].val.p);
    }
}

static int put_le(Buf *b, unsigned long long v, int bytes) {
    unsigned char tmp[8];
    for (int i = 0; i < bytes; i++) tmp[i] = (unsigned char)(v >> (8 * i));
    return buf_put(b, tmp, (size_t)bytes);
}

static int put_value(Col *col, int type, const Val *v) {
    switch (type) {
    case P_BYTES:
        return put_le(&col->val, (unsigned long long)v->len, 4) < 0 ? -1 : buf_put(&col->val, v->s, v->len);
    case P_I32:
        return put_le(&col->val, (unsigned long long)v->i, 4);
    case P_I64:
        return put_le(&col->val, (unsigned long long)v->i, 8);
    case P_BOOL:
        return buf_byte(&col->val, v->i ? 1 : 0);
    default: { /* decimal(20, 0): 9 bytes, big-endian two's complement */
        unsigned char tmp[9];
        unsigned long long u = (unsigned long long)v->i;
        tmp[0] = v->i < 0 ? 0xff : 0;
        for (int i = 0; i < 8; i++) tmp[8 - i] = (unsigned char)(u >> (8 * i));
        return buf_put(&col->val, tmp, 9);
    }
    }
}

/* One row's top-level columns (unset: null). */
static int emit_top(Table *t, const Val v[N_TOP]) {
    for (int c = 0; c < N_TOP; c++) {
        Col *col = &t->cols[c];
        if (buf_byte(&col->def, v[c].set ? 1 : 0) < 0) return -1;
        if (v[c].set && put_value(col, COL_TYPE[c], &v[c]) < 0) return -1;
    }
    return 0;
}

/* A list column's fields for one row: null (def 0) or empty (def 1). */
static int emit_list_level(Table *t, int first, int n, unsigned char def) {
    for (int c = first; c < first + n; c++)
        if (buf_byte(&t->cols[c].def, def) < 0 || buf_byte(&t->cols[c].rep, 0) < 0) return -1;
    return 0;
}

static int emit_lists_null(Table *t) { return emit_list_level(t, C_O_NAME, N_COLS - C_O_NAME, 0); }

/* One element of a list column: its `n` fields, all present. */
static int emit_element(Table *t, int first, int n, int later, const Val *v) {
    for (int c = first; c < first + n; c++) {
        Col *col = &t->cols[c];
        if (buf_byte(&col->def, NESTED_DEF) < 0 || buf_byte(&col->rep, later ? 1 : 0) < 0) return -1;
        if (put_value(col, COL_TYPE[c], &v[c - first]) < 0) return -1;
    }
    return 0;
}

static Val str_val(const char *s) { return (Val){1, 0, s, strlen(s)}; }
static Val int_val(long long i) { return (Val){1, i, NULL, 0}; }

/* type(OSError(err, ...)).__name__: the subclass Python raises for `err` (static storage). */
static const char *errno_class(int err) {
    PyObject *e = PyObject_CallFunction(PyExc_OSError, "is", err, "");
    if (!e) {
        PyErr_Clear();
        return "OSError";
    }
    const char *name = Py_TYPE(e)->tp_name;
    Py_DECREF(e);
    return name;
}

/* An error row (t = error); rel is NUL-terminated. */
static int row_error(Table *t, int d, const char *rel, const char *stage, const char *cls, const char *reason,
                     size_t reason_len) {
    Val v[N_TOP] = {{0}};
    v[C_T] = str_val("error");
    v[C_D] = int_val(d);
    v[C_NAME] = str_val(rel);
    v[C_STAGE] = str_val(stage);
    v[C_ERROR_CLASS] = str_val(cls);
    v[C_REASON] = (Val){1, 0, reason, reason_len};
    return emit_top(t, v) < 0 || emit_lists_null(t) < 0 ? -1 : 0;
}

/* local.py `_odd_entry`: the error row of an entry whose stat failed. */
static int row_odd_entry(Table *t, int d, const char *rel, const Failed *f) {
    const char *cls, *reason;
    if (f->err == ENOENT) {
        cls = "FileNotFoundError";
        reason = f->islink ? "broken symbolic link" : strerror(ENOENT);
    } else {
        cls = errno_class(f->err);
        reason = strerror(f->err);
    }
    return row_error(t, d, rel, "list", cls, reason, strlen(reason));
}

/* `prefix/name` (or `name` without a prefix), NUL-terminated, in `b`. */
static const char *join_rel(Buf *b, const char *prefix, const char *name) {
    b->len = 0;
    if (prefix && (buf_put(b, prefix, strlen(prefix)) < 0 || buf_byte(b, '/') < 0)) return NULL;
    if (buf_put(b, name, strlen(name)) < 0 || buf_byte(b, 0) < 0) return NULL;
    return b->p;
}

/* reader(root/rel) for a small file this pass did not read: bytes, or (error_class, reason); NULL with an error. */
static PyObject *call_reader(PyObject *reader, PyObject *root, const char *rel) {
    PyObject *path = PyUnicode_FromFormat("%U/%s", root, rel);
    if (!path) return NULL;
    PyObject *got = PyObject_CallOneArg(reader, path);
    Py_DECREF(path);
    if (got && !PyBytes_Check(got) && !(PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2)) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "reader must return bytes or (error_class, reason)");
        return NULL;
    }
    return got;
}

static int utf8_val(PyObject *s, Val *v) {
    Py_ssize_t len;
    const char *p = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &len) : NULL;
    if (!p) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "reader's error must be two str");
        return -1;
    }
    *v = (Val){1, 0, p, (size_t)len};
    return 0;
}

/* One summed-up partition dir: its row (t = dir) with others, contents and read_errors. */
static int row_dir(Table *t, int d, PyObject *root, const char *dir_name, const Other *dir, const Scan *s,
                   PyObject *reads, PyObject *reader, Buf *scratch) {
    int rc = -1;
    /* the small files this pass did not read go through `reader`, once, before any column is written */
    PyObject *held = PyList_New((Py_ssize_t)s->n_others);
    if (!held) return -1;
    size_t n_contents = 0, n_errors = 0;
    for (size_t i = 0; i < s->n_others; i++) {
        const Other *o = &s->others[i];
        PyObject *got = Py_NewRef(Py_None);
        if (o->kind == KIND_FILE && is_wanted(reads, scan_name(s, o->name_off), o->name_len)) {
            if (o->data_len >= 0) {
                n_contents++;
            } else {
                Py_DECREF(got);
                const char *rel = join_rel(scratch, dir_name, scan_name(s, o->name_off));
                got = rel ? call_reader(reader, root, rel) : (PyErr_NoMemory(), NULL);
                if (!got) goto out;
                if (PyBytes_Check(got)) n_contents++;
                else n_errors++;
            }
        }
        PyList_SET_ITEM(held, (Py_ssize_t)i, got);
    }

    char hex[64];
    sha256_hex((const unsigned char *)(s->text.p ? s->text.p : ""), s->text.len, hex);
    Val v[N_TOP] = {{0}};
    v[C_T] = str_val("dir");
    v[C_D] = int_val(d);
    v[C_NAME] = str_val(dir_name);
    v[C_KIND] = int_val(KIND_DIR);
    v[C_SIZE] = int_val(0);
    v[C_MTIME] = int_val(dir->mtime_ns);
    v[C_ISLINK] = int_val(dir->islink);
    v[C_FILES] = int_val(s->files);
    v[C_BYTES] = int_val(s->total);
    v[C_LOG_BYTES] = int_val(s->log_bytes);
    v[C_INDEX_BYTES] = int_val(s->index_bytes);
    v[C_SEGMENTS] = int_val((long long)s->n_logs);
    if (s->n_logs) {
        v[C_MIN_OFFSET] = int_val(s->logs[0]);
        v[C_MAX_OFFSET] = int_val(s->logs[s->n_logs - 1]);
    }
    v[C_INDEX_SETS] = int_val(s->index_sets);
    v[C_ORPHANS] = int_val(s->orphans);
    v[C_TRANSIENT] = int_val(s->transient);
    v[C_OLDEST] = int_val(s->oldest);
    v[C_NEWEST] = int_val(s->newest);
    v[C_FINGERPRINT] = (Val){1, 0, hex, 64};
    if (emit_top(t, v) < 0) goto nomem;

    if (!s->n_others && emit_list_level(t, C_O_NAME, 5, 1) < 0) goto nomem;
    for (size_t i = 0; i < s->n_others; i++) {
        const Other *o = &s->others[i];
        Val e[5] = {{1, 0, scan_name(s, o->name_off), o->name_len}, int_val(o->kind), int_val(o->size),
                    int_val(o->mtime_ns), int_val(o->islink)};
        if (emit_element(t, C_O_NAME, 5, i > 0, e) < 0) goto nomem;
    }
    if (!n_contents && emit_list_level(t, C_C_NAME, 2, 1) < 0) goto nomem;
    if (!n_errors && emit_list_level(t, C_R_NAME, 3, 1) < 0) goto nomem;
    size_t k_contents = 0, k_errors = 0;
    for (size_t i = 0; i < s->n_others; i++) {
        const Other *o = &s->others[i];
        PyObject *got = PyList_GET_ITEM(held, (Py_ssize_t)i);
        Val name = {1, 0, scan_name(s, o->name_off), o->name_len};
        if (o->data_len >= 0 || PyBytes_Check(got)) {
            Val e[2] = {name, o->data_len >= 0 ? (Val){1, 0, s->data.p + o->data_off, (size_t)o->data_len}
                                               : (Val){1, 0, PyBytes_AS_STRING(got), (size_t)PyBytes_GET_SIZE(got)}};
            if (emit_element(t, C_C_NAME, 2, k_contents++ > 0, e) < 0) goto nomem;
        } else if (PyTuple_Check(got)) {
            Val e[3] = {name};
            if (utf8_val(PyTuple_GET_ITEM(got, 0), &e[1]) < 0 || utf8_val(PyTuple_GET_ITEM(got, 1), &e[2]) < 0)
                goto out;
            if (emit_element(t, C_R_NAME, 3, k_errors++ > 0, e) < 0) goto nomem;
        }
    }
    rc = 0;
    goto out;
nomem:
    PyErr_NoMemory();
out:
    Py_DECREF(held);
    return rc;
}

/* Bytes of `levels` as RLE runs (every run a repeated value: runs concatenate), after their 4-byte length. */
static size_t levels_size(const Buf *levels) {
    size_t size = 4;
    const unsigned char *p = (const unsigned char *)levels->p;
    for (size_t i = 0; i < levels->len;) {
        size_t j = i + 1;
        while (j < levels->len && p[j] == p[i]) j++;
        for (unsigned long long header = (unsigned long long)(j - i) << 1; header >= 0x80; header >>= 7) size++;
        size += 2; /* the header's last byte, the value */
        i = j;
    }
    return size;
}

static char *put_levels(char *out, const Buf *levels) {
    char *start = out;
    out += 4;
    const unsigned char *p = (const unsigned char *)levels->p;
    for (size_t i = 0; i < levels->len;) {
        size_t j = i + 1;
        while (j < levels->len && p[j] == p[i]) j++;
        unsigned long long header = (unsigned long long)(j - i) << 1;
        for (; header >= 0x80; header >>= 7) *out++ = (char)((header & 0x7f) | 0x80);
        *out++ = (char)header;
        *out++ = (char)p[i];
        i = j;
    }
    size_t len = (size_t)(out - start) - 4;
    for (int i = 0; i < 4; i++) start[i] = (char)(len >> (8 * i));
    return out;
}

/* [(page_body, num_values)] per leaf column: repetition levels (list fields), definition levels, values; each
   column's buffers are freed once its page is built (the table is not used after). */
static PyObject *encode_pages(Table *t) {
    PyObject *pages = PyList_New(N_COLS);
    if (!pages) return NULL;
    for (int c = 0; c < N_COLS; c++) {
        Col *col = &t->cols[c];
        int is_bool = COL_TYPE[c] == P_BOOL;
        size_t values = is_bool ? (col->val.len + 7) / 8 : col->val.len;
        size_t size = (c < N_TOP ? 0 : levels_size(&col->rep)) + levels_size(&col->def) + values;
        PyObject *body = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
        if (!body) {
            Py_DECREF(pages);
            return NULL;
        }
        char *out = PyBytes_AS_STRING(body);
        if (c >= N_TOP) out = put_levels(out, &col->rep);
        out = put_levels(out, &col->def);
        if (is_bool) { /* bit-packed, least significant bit first */
            memset(out, 0, values);
            for (size_t i = 0; i < col->val.len; i++)
                if (col->val.p[i]) out[i / 8] |= (char)(1 << (i % 8));
        } else if (values) {
            memcpy(out, col->val.p, values);
        }
        PyObject *item = Py_BuildValue("(Nn)", body, (Py_ssize_t)col->def.len);
        free(col->def.p);
        free(col->rep.p);
        free(col->val.p);
        memset(col, 0, sizeof *col);
        if (!item) {
            Py_DECREF(pages);
            return NULL;
        }
        PyList_SET_ITEM(pages, c, item);
    }
    return pages;
}

static int append_table(Table *to, const Table *from) {
    for (int c = 0; c < N_COLS; c++) {
        const Col *f = &from->cols[c];
        Col *o = &to->cols[c];
        if (buf_put(&o->def, f->def.p, f->def.len) < 0 || buf_put(&o->rep, f->rep.p, f->rep.len) < 0 ||
            buf_put(&o->val, f->val.p, f->val.len) < 0)
            return -1;
    }
    return 0;
}

static PyObject *inventory_columns(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *root, *url, *tails_obj, *root_reads, *reads, *reader;
    int d;
    long long read_limit;
    if (!PyArg_ParseTuple(args, "UUiOO!O!LO", &root, &url, &d, &tails_obj, &PyTuple_Type, &root_reads, &PyTuple_Type,
                          &reads, &read_limit, &reader))
        return NULL;
    Tails tails, no_tails = {.n = 0};
    if (get_tails(tails_obj, &tails) < 0) return NULL;
    Py_ssize_t root_len, url_len;
    const char *root_utf8 = PyUnicode_AsUTF8AndSize(root, &root_len);
    const char *url_utf8 = root_utf8 ? PyUnicode_AsUTF8AndSize(url, &url_len) : NULL;
    if (!url_utf8) { /* not valid UTF-8 (surrogate escapes): the Python path hex-escapes it */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *root_fs = PyUnicode_EncodeFSDefault(root);
    if (!root_fs) return NULL;
    const char *root_path = PyBytes_AS_STRING(root_fs);

    Table *t = calloc(1, sizeof *t), *errs = calloc(1, sizeof *errs);
    Scan rs = {0}, ps = {0};
    Buf scratch = {0}, rel = {0};
    PyObject *result = NULL, *failed = NULL, *root_held = NULL;
    int root_fd = -1, fallback = 0;
    if (!t || !errs) {
        PyErr_NoMemory();
        goto done;
    }
    int rc = scan_core(&rs, AT_FDCWD, root_path, &no_tails, root_reads, read_limit);
    if (rc == SCAN_PYERROR) goto done;
    if (rc == SCAN_FALLBACK) {
        fallback = 1;
        goto done;
    }
    if (rc == SCAN_OSERROR) { /* add_unlisted */
        const char *cls = errno_class(rs.os_errno), *reason = strerror(rs.os_errno);
        Val v[N_TOP] = {{0}};
        v[C_T] = str_val("log_dir");
        v[C_D] = int_val(d);
        v[C_NAME] = (Val){1, 0, url_utf8, (size_t)url_len};
        v[C_ERROR_CLASS] = str_val(cls);
        v[C_REASON] = str_val(reason);
        if (emit_top(t, v) < 0 || emit_lists_null(t) < 0) goto nomem;
        failed = PyUnicode_DecodeLocale(reason, "surrogateescape");
        if (!failed) goto done;
        goto encode;
    }

    struct statvfs sv;
    int have_fs = statvfs(root_path, &sv) == 0;
    {
        Val v[N_TOP] = {{0}};
        v[C_T] = str_val("log_dir");
        v[C_D] = int_val(d);
        v[C_NAME] = (Val){1, 0, root_utf8, (size_t)root_len};
        if (have_fs) {
            unsigned long long frsize = sv.f_frsize;
            v[C_FS_TOTAL] = int_val((long long)(sv.f_blocks * frsize));
            v[C_FS_USED] = int_val((long long)((sv.f_blocks - sv.f_bfree) * frsize));
            v[C_FS_FREE] = int_val((long long)(sv.f_bavail * frsize));
        }
        if (emit_top(t, v) < 0 || emit_lists_null(t) < 0) goto nomem;
    }
    for (size_t i = 0; i < rs.n_errs; i++)
        if (row_odd_entry(errs, d, scan_name(&rs, rs.errs[i].name_off), &rs.errs[i]) < 0) goto nomem;

    /* the root's small files this pass did not read go through `reader` now, with no directory open (as the
       Python path reads them once the listing is done) */
    root_held = PyList_New((Py_ssize_t)rs.n_others);
    if (!root_held) goto done;
    for (size_t i = 0; i < rs.n_others; i++) {
        const Other *o = &rs.others[i];
        PyObject *got = NULL;
        if (o->kind == KIND_FILE && o->data_len < 0 && is_wanted(root_reads, scan_name(&rs, o->name_off), o->name_len)) {
            got = call_reader(reader, root, scan_name(&rs, o->name_off));
            if (!got) goto done;
        }
        PyList_SET_ITEM(root_held, (Py_ssize_t)i, got ? got : Py_NewRef(Py_None));
    }

    root_fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; i < rs.n_others; i++) {
        const Other *o = &rs.others[i];
        const char *name = scan_name(&rs, o->name_off);
        if (o->kind != KIND_DIR) { /* a root entry */
            Val v[N_TOP] = {{0}};
            v[C_T] = str_val("entry");
            v[C_D] = int_val(d);
            v[C_NAME] = (Val){1, 0, name, o->name_len};
            v[C_KIND] = int_val(o->kind);
            v[C_SIZE] = int_val(o->size);
            v[C_MTIME] = int_val(o->mtime_ns);
            v[C_ISLINK] = int_val(o->islink);
            PyObject *got = PyList_GET_ITEM(root_held, (Py_ssize_t)i);
            if (o->kind == KIND_FILE && o->data_len >= 0 && is_wanted(root_reads, name, o->name_len)) {
                v[C_DATA] = (Val){1, 0, rs.data.p + o->data_off, (size_t)o->data_len};
            } else if (PyBytes_Check(got)) {
                v[C_DATA] = (Val){1, 0, PyBytes_AS_STRING(got), (size_t)PyBytes_GET_SIZE(got)};
            } else if (PyTuple_Check(got)) {
                v[C_STAGE] = str_val("read");
                if (utf8_val(PyTuple_GET_ITEM(got, 0), &v[C_ERROR_CLASS]) < 0 ||
                    utf8_val(PyTuple_GET_ITEM(got, 1), &v[C_REASON]) < 0)
                    goto done;
            }
            if (emit_top(t, v) < 0 || emit_lists_null(t) < 0) goto nomem;
            continue;
        }
        const char *open_path = root_fd >= 0 ? name : join_rel(&scratch, root_path, name);
        if (!open_path) goto nomem;
        rc = scan_core(&ps, root_fd >= 0 ? root_fd : AT_FDCWD, open_path, &tails, reads, read_limit);
        if (rc == SCAN_PYERROR) goto done;
        if (rc == SCAN_FALLBACK) {
            fallback = 1;
            goto done;
        }
        if (rc == SCAN_OSERROR) { /* local.py `_failed_dir` */
            const char *cls = errno_class(ps.os_errno), *reason = strerror(ps.os_errno);
            Val v[N_TOP] = {{0}};
            v[C_T] = str_val("dir");
            v[C_D] = int_val(d);
            v[C_NAME] = (Val){1, 0, name, o->name_len};
            v[C_KIND] = int_val(KIND_DIR);
            v[C_SIZE] = int_val(0);
            v[C_MTIME] = int_val(o->mtime_ns);
            v[C_ISLINK] = int_val(o->islink);
            v[C_STAGE] = str_val("list");
            v[C_ERROR_CLASS] = str_val(cls);
            v[C_REASON] = str_val(reason);
            if (emit_top(t, v) < 0 || emit_lists_null(t) < 0) goto nomem;
            if (row_error(errs, d, name, "list", cls, reason, strlen(reason)) < 0) goto nomem;
            continue;
        }
        for (size_t j = 0; j < ps.n_errs; j++) {
            const char *r = join_rel(&rel, name, scan_name(&ps, ps.errs[j].name_off));
            if (!r || row_odd_entry(errs, d, r, &ps.errs[j]) < 0) goto nomem;
        }
        if (row_dir(t, d, root, name, o, &ps, reads, reader, &scratch) < 0) goto done;
    }
    if (!have_fs) {
        const char *reason = "statvfs not supported here";
        if (row_error(errs, d, "", "statvfs", "OSError", reason, strlen(reason)) < 0) goto nomem;
    }
    if (append_table(t, errs) < 0) goto nomem;

encode: {
    Py_ssize_t rows = (Py_ssize_t)t->cols[C_T].def.len;
    PyObject *pages = encode_pages(t);
    if (!pages) goto done;
    result = Py_BuildValue("(nNO)", rows, pages, failed ? failed : Py_None);
    goto done;
}
nomem:
    PyErr_NoMemory();
done:
    if (root_fd >= 0) close(root_fd);
    Py_XDECREF(root_held);
    Py_XDECREF(failed);
    Py_DECREF(root_fs);
    scan_free(&rs);
    scan_free(&ps);
    free(scratch.p);
    free(rel.p);
    if (t) table_free(t);
    if (errs) table_free(errs);
    free(t);
    free(errs);
    if (fallback && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* sha256_hexdigest(data: bytes, portable: bool = False) -> str: what the fingerprint computes, for the tests
   (portable: the plain C rounds even where the SHA extensions are used). */
static PyObject *sha256_hexdigest(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int portable = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &portable)) return NULL;
    void (*saved)(uint32_t[8], const unsigned char *, size_t) = sha_blocks;
    if (portable) sha_blocks = sha_blocks_c;
    char hex[64];
    sha256_hex(view.buf, (size_t)view.len, hex);
    sha_blocks = saved;
    PyBuffer_Release(&view);
    return PyUnicode_FromStringAndSize(hex, 64);
}

static PyMethodDef methods[] = {
    {"sha256_hexdigest", sha256_hexdigest, METH_VARARGS, "hashlib.sha256(data).hexdigest(), as inventory_columns does."},
    {"scan_dir", scan_dir, METH_VARARGS, "List and summarize one partition dir (see the module comment)."},
    {"inventory_columns", inventory_columns, METH_VARARGS,
     "One log dir's format-2 inventory rows as Parquet page bodies (see the module comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.crawl._native_dirscan", "Compiled partition-dir listing + summary.", 0,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_dirscan(void) {
#ifdef HAVE_SHA_NI
    if (cpu_has_sha_ni()) sha_blocks = sha_blocks_ni;
#endif
    return PyModule_Create(&module);
}
