/* Compiled twin of one partition dir's listing + summary (pure Python: backends/local.py `_scan` followed by
 * kafka/dir_summary.py `summarize_entries`).
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
    size_t key_off, key_len; /* where in Work.keys */
    long long size;
    long long mtime_s; /* whole seconds (floor), what the fingerprint counts */
} FpItem;

typedef struct {
    const char *bytes[MAX_TAILS];
    Py_ssize_t len[MAX_TAILS];
    int code[MAX_TAILS];
    int n;
} Tails;

/* Growable arrays, freed in one place. */
typedef struct {
    FpItem *items;
    size_t n, cap;
    char *keys; /* every key, back to back */
    size_t keys_len, keys_cap;
    long long *logs, *idx;
    size_t n_logs, cap_logs, n_idx, cap_idx;
} Work;

static int push_ll(long long **arr, size_t *n, size_t *cap, long long v) {
    if (*n == *cap) {
        size_t cap2 = *cap ? *cap * 2 : 16;
        long long *p = realloc(*arr, cap2 * sizeof **arr);
        if (!p) return -1;
        *arr = p;
        *cap = cap2;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

static void work_free(Work *w) {
    free(w->keys);
    free(w->items);
    free(w->logs);
    free(w->idx);
}

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

/* The whole content of `name`, a regular file of `size` bytes when it was stat'ed, or NULL with no exception set.
   No fstat: one read of size + 1 bytes must return exactly `size` bytes. Anything else (the file changed, or is no
   longer a regular file; O_NONBLOCK keeps a FIFO from blocking) leaves the file to Python, which reads it itself. */
static PyObject *read_small(int dfd, const char *name, long long size, long long limit) {
    if (size < 0 || size > limit) return NULL;
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return NULL;
    PyObject *out = NULL;
    size_t want = (size_t)size + 1;
    char *buf = malloc(want);
    if (buf) {
        ssize_t got;
        do {
            got = read(fd, buf, want);
        } while (got < 0 && errno == EINTR);
        if (got == (ssize_t)size) {
            out = PyBytes_FromStringAndSize(buf, got);
            if (!out) PyErr_Clear();
        }
        free(buf);
    }
    close(fd);
    return out;
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

static PyObject *scan_dir(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj, *tails_obj, *reads_obj, *name_obj = NULL;
    long long read_limit;
    int parent_fd = -1;
    if (!PyArg_ParseTuple(args, "UOO!L|iU", &path_obj, &tails_obj, &PyTuple_Type, &reads_obj, &read_limit, &parent_fd,
                          &name_obj))
        return NULL;
    Tails tails;
    if (tails_obj == cached_tails_obj) {
        tails = cached_tails;
    } else {
        if (parse_tails(tails_obj, &tails) < 0) return NULL;
        if (PyTuple_CheckExact(tails_obj)) { /* immutable: safe to reuse while we hold it */
            Py_INCREF(tails_obj);
            Py_XSETREF(cached_tails_obj, tails_obj);
            cached_tails = tails;
        }
    }
    /* open `name` under `parent_fd` when given (no walk of the whole path), else `path` */
    int relative = parent_fd >= 0 && name_obj != NULL;
    PyObject *open_bytes = PyUnicode_EncodeFSDefault(relative ? name_obj : path_obj);
    if (!open_bytes) return NULL;
    int fd = openat(relative ? parent_fd : AT_FDCWD, PyBytes_AS_STRING(open_bytes),
                    O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    int open_errno = errno;
    Py_DECREF(open_bytes);
    DirReader dir;
    if (fd < 0 || dir_open(&dir, fd) < 0) {
        errno = fd < 0 ? open_errno : errno;
        return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_obj);
    }
    int dfd = dir_fd(&dir);

    Work w = {0};
    PyObject *others = PyList_New(0), *errors = PyList_New(0), *contents = PyDict_New();
    PyObject *result = NULL;
    int fallback = 0;
    long long files = 0, total = 0, log_bytes = 0, index_bytes = 0, transient = 0, oldest = 0, newest = 0;
    if (!others || !errors || !contents) goto done;

    for (;;) {
        DirItem de;
        int more = dir_next(&dir, &de);
        if (more < 0) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_obj);
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
                fallback = 1;
                goto done;
            }
            Py_DECREF(check);
        }

        /* stat like os.DirEntry: is_symlink from d_type (lstat when unknown), then stat() follows links */
        struct stat st;
        int islink = de.type == DT_LNK, err = 0;
        if (de.type == DT_UNKNOWN) {
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) islink = S_ISLNK(st.st_mode);
        }
        if (fstatat(dfd, name, &st, islink ? 0 : AT_SYMLINK_NOFOLLOW) != 0) err = errno;
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
                fallback = 1;
                goto done;
            }
            mtime_s = sec;
            mtime_ns = sec * 1000000000LL + (long long)st.st_mtim.tv_nsec;
        } else {
            islink = err == ENOENT && islink; /* only a broken link keeps its link flag */
            PyObject *e = Py_BuildValue("(s#iN)", name, (Py_ssize_t)len, err, PyBool_FromLong(islink));
            if (!e || PyList_Append(errors, e) < 0) {
                Py_XDECREF(e);
                goto done;
            }
            Py_DECREF(e);
        }

        /* fingerprint item */
        if (w.n == w.cap) {
            size_t cap2 = w.cap ? w.cap * 2 : 32;
            FpItem *p = realloc(w.items, cap2 * sizeof *p);
            if (!p) {
                PyErr_NoMemory();
                goto done;
            }
            w.items = p;
            w.cap = cap2;
        }
        FpItem *it = &w.items[w.n];
        it->key_len = len + (kind == KIND_DIR);
        if (w.keys_len + it->key_len > w.keys_cap) {
            size_t cap2 = w.keys_cap ? w.keys_cap * 2 : 1024;
            while (cap2 < w.keys_len + it->key_len) cap2 *= 2;
            char *p = realloc(w.keys, cap2);
            if (!p) {
                PyErr_NoMemory();
                goto done;
            }
            w.keys = p;
            w.keys_cap = cap2;
        }
        it->key_off = w.keys_len;
        memcpy(w.keys + w.keys_len, name, len);
        if (kind == KIND_DIR) w.keys[w.keys_len + len] = '/';
        w.keys_len += it->key_len;
        it->size = size;
        it->mtime_s = mtime_s;
        w.n++;

        int code = -1;
        long long offset = 0;
        if (kind != KIND_DIR) {
            files++;
            total += size;
            if (mtime_ns > 0) {
                if (!oldest || mtime_ns < oldest) oldest = mtime_ns;
                if (mtime_ns > newest) newest = mtime_ns;
            }
            code = segment_code(&tails, name, len, &offset);
            if (code >= 0 && offset == -2) {
                fallback = 1;
                goto done;
            }
        }
        if (code == SEG_TRANSIENT) {
            transient++;
        } else if (code == SEG_LOG) {
            log_bytes += size;
            if (push_ll(&w.logs, &w.n_logs, &w.cap_logs, offset) < 0) {
                PyErr_NoMemory();
                goto done;
            }
        } else if (code == SEG_INDEX) {
            index_bytes += size;
            if (push_ll(&w.idx, &w.n_idx, &w.cap_idx, offset) < 0) {
                PyErr_NoMemory();
                goto done;
            }
        } else if (code < 0) {
            PyObject *o = Py_BuildValue("(s#iLLN)", name, (Py_ssize_t)len, kind, size, mtime_ns, PyBool_FromLong(islink));
            if (!o || PyList_Append(others, o) < 0) {
                Py_XDECREF(o);
                goto done;
            }
            Py_DECREF(o);
            if (kind == KIND_FILE) {
                for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(reads_obj); i++) {
                    PyObject *want = PyTuple_GET_ITEM(reads_obj, i);
                    if (!PyBytes_Check(want) || (size_t)PyBytes_GET_SIZE(want) != len ||
                        memcmp(PyBytes_AS_STRING(want), name, len) != 0)
                        continue;
                    PyObject *data = read_small(dfd, name, size, read_limit);
                    if (data) {
                        PyObject *key = PyUnicode_DecodeUTF8(name, (Py_ssize_t)len, NULL);
                        int rc = key ? PyDict_SetItem(contents, key, data) : -1;
                        Py_XDECREF(key);
                        Py_DECREF(data);
                        if (rc < 0) goto done;
                    }
                    break;
                }
            }
        }
    }

    /* index offsets (distinct) and how many of them have no .log */
    qsort(w.logs, w.n_logs, sizeof *w.logs, cmp_ll);
    qsort(w.idx, w.n_idx, sizeof *w.idx, cmp_ll);
    long long index_sets = 0, orphans = 0;
    for (size_t i = 0, j = 0; i < w.n_idx; i++) {
        if (i && w.idx[i] == w.idx[i - 1]) continue;
        index_sets++;
        while (j < w.n_logs && w.logs[j] < w.idx[i]) j++;
        if (j == w.n_logs || w.logs[j] != w.idx[i]) orphans++;
    }

    /* fingerprint text: "name\0size\0seconds\n" per entry, sorted by name ("/" appended for directories) */
    for (size_t i = 0; i < w.n; i++) w.items[i].key = w.keys + w.items[i].key_off;
    qsort(w.items, w.n, sizeof *w.items, cmp_item);
    size_t text_len = 0;
    for (size_t i = 0; i < w.n; i++) text_len += w.items[i].key_len + 2 * 20 + 3; /* 2 numbers (<= 20 chars), 2 separators, newline */
    char *text = malloc(text_len + 1);
    if (!text) {
        PyErr_NoMemory();
        goto done;
    }
    size_t pos = 0;
    for (size_t i = 0; i < w.n; i++) {
        FpItem *it = &w.items[i];
        memcpy(text + pos, it->key, it->key_len);
        pos += it->key_len;
        text[pos++] = '\0';
        pos += put_ll(text + pos, it->size); /* at most 19 digits and a sign */
        text[pos++] = '\0';
        pos += put_ll(text + pos, it->mtime_s);
        text[pos++] = '\n';
    }
    PyObject *fp = PyBytes_FromStringAndSize(text, (Py_ssize_t)pos);
    free(text);
    if (!fp) goto done;

    PyObject *log_min = Py_None, *log_max = Py_None;
    if (w.n_logs) {
        log_min = PyLong_FromLongLong(w.logs[0]);
        log_max = PyLong_FromLongLong(w.logs[w.n_logs - 1]);
        if (!log_min || !log_max) {
            Py_XDECREF(log_min);
            Py_XDECREF(log_max);
            Py_DECREF(fp);
            goto done;
        }
    } else {
        Py_INCREF(log_min);
        Py_INCREF(log_max);
    }
    result = Py_BuildValue("(LLLLnNNLLLLLNOOO)", files, total, log_bytes, index_bytes, (Py_ssize_t)w.n_logs,
                           log_min, log_max, index_sets, orphans, transient, oldest, newest, fp, others, errors,
                           contents);

done:
    dir_close(&dir);
    work_free(&w);
    Py_XDECREF(others);
    Py_XDECREF(errors);
    Py_XDECREF(contents);
    if (fallback && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

static PyMethodDef methods[] = {
    {"scan_dir", scan_dir, METH_VARARGS, "List and summarize one partition dir (see the module comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.crawl._native_dirscan", "Compiled partition-dir listing + summary.", 0,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_dirscan(void) { return PyModule_Create(&module); }
