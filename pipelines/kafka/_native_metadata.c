/* Compiled fast path of a KRaft metadata log scan (pure-Python twin: kafka/metadata_log.py `MetadataLog._scan`,
 * its uncompressed-data-batch loop, and the decoders kafka/metadata_compiler.py generates).
 *
 * compile_program(spec) -> capsule
 *   Turns one struct program, built in Python from the declarative schema table by
 *   kafka/metadata_native.py `struct_program`, into C arrays once:
 *     spec = (keys: tuple[str], defaults: tuple, plain: tuple[op], tagged: tuple[op], flexible: bool)
 *     op   = (slot: int, kind: int, nullable: bool, tag: int, sub: spec | None)
 *   `keys`/`defaults` are every field of the type in schema order (the decoded dict's key order); `plain` are the
 *   untagged fields present in the version in wire order, `tagged` the tagged ones. Kinds are K_* below; arrays are
 *   K_ARRAY + element kind.
 *
 * scan(buf, pos, end, ctx, raw_mode: bool, verify_crc: bool, max_records: int)
 *     -> (entries: list, pos, batches, valid_bytes, records, last_offset | None)
 *   Reads whole record batches from `pos` while each one is a plain case: a complete magic-2 batch with a valid
 *   CRC, neither compressed nor control, whose records are all framed canonically (no headers) and whose values
 *   all decode with a compiled program (or are tiny values already in the tiny-record cache). It stops BEFORE the
 *   first batch that is anything else (truncated tail, bad size/magic/CRC, compressed, control, an error or an
 *   unusual encoding anywhere in it) and after the batch that reaches `max_records`. The Python loop then takes
 *   that batch, so every error, its message and its offset come from the Python code: this file never reports
 *   one. A batch is never half-read: its entries are dropped when one of its records needs Python.
 *   ctx = (programs, tiny, uuid_cache, uuid_factory, crc32c, fields_record_type, new_entry, new_record,
 *          unknown_tags_key): `programs[api_key][version]` is a capsule or None; the rest are the Python objects
 *   the pure path uses, so both paths build identical objects.
 *
 * Untrusted bytes: every read is bounds-checked against the end of the current value, record or batch.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

enum {
    K_INT8 = 0, K_INT16 = 1, K_INT32 = 2, K_INT64 = 3, K_UINT16 = 4, K_BOOL = 5, K_FLOAT64 = 6, K_UUID = 7,
    K_STRING = 8, K_BYTES = 9, K_STRUCT = 10, K_ARRAY = 16,
};

/* Record batch v2 header layout (kafka/record_batch.py HEADER = ">qiibIhiqqqhii"). */
enum {
    B_LENGTH = 8, B_EPOCH = 12, B_MAGIC = 16, B_CRC = 17, B_ATTRIBUTES = 21, B_BASE_TS = 27, B_COUNT = 57,
    HEADER_SIZE = 61, LOG_OVERHEAD = 12, HEADER_UP_TO_MAGIC = 17, MIN_BATCH_LENGTH = 14,
    ATTR_NOT_PLAIN = 0x27, /* compression codec bits + control bit */
};

#define OK 0
#define BAIL 1 /* this input needs the Python path (no exception set) */
#define ERR (-1) /* a Python exception is set */

typedef struct Prog Prog;
typedef struct {
    Py_ssize_t slot;
    int kind;
    int nullable;
    long tag;
    Prog *sub;
} Op;

struct Prog {
    PyObject *keys; /* borrowed from owner */
    PyObject *defaults; /* borrowed from owner */
    Py_ssize_t nslots, nplain, ntagged;
    int flexible;
    Op *plain, *tagged;
    PyObject *template; /* {key: default} in key order: each decoded dict starts as a copy of it */
    PyObject *owner; /* the spec tuple (strong ref; top level only) */
};

typedef struct {
    PyObject *programs, *tiny, *uuid_cache, *uuid_factory, *crc, *fields_record, *new_entry, *new_record;
    PyObject *unknown_key;
    int raw;
} Ctx;

static const char CAPSULE[] = "pipelines.kafka._native_metadata.program";

/* -- programs ------------------------------------------------------------------------------------------ */

static void prog_free(Prog *p) {
    if (p == NULL) return;
    for (Py_ssize_t i = 0; i < p->nplain; i++) prog_free(p->plain[i].sub);
    for (Py_ssize_t i = 0; i < p->ntagged; i++) prog_free(p->tagged[i].sub);
    PyMem_Free(p->plain);
    PyMem_Free(p->tagged);
    Py_XDECREF(p->template);
    Py_XDECREF(p->owner);
    PyMem_Free(p);
}

static Prog *prog_build(PyObject *spec);

static int ops_build(PyObject *ops, Op **out, Py_ssize_t *n, Py_ssize_t nslots) {
    if (!PyTuple_Check(ops)) {
        PyErr_SetString(PyExc_TypeError, "ops must be a tuple");
        return -1;
    }
    *n = PyTuple_GET_SIZE(ops);
    *out = PyMem_Calloc((size_t)(*n ? *n : 1), sizeof(Op));
    if (*out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *op = PyTuple_GET_ITEM(ops, i);
        if (!PyTuple_Check(op) || PyTuple_GET_SIZE(op) != 5) {
            PyErr_SetString(PyExc_TypeError, "op must be a 5-tuple");
            return -1;
        }
        Op *o = &(*out)[i];
        o->slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(op, 0));
        o->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(op, 1));
        o->nullable = PyObject_IsTrue(PyTuple_GET_ITEM(op, 2));
        o->tag = PyLong_AsLong(PyTuple_GET_ITEM(op, 3));
        if (PyErr_Occurred()) return -1;
        if (o->slot < 0 || o->slot >= nslots || o->nullable < 0) {
            PyErr_SetString(PyExc_ValueError, "bad op");
            return -1;
        }
        int base = o->kind >= K_ARRAY ? o->kind - K_ARRAY : o->kind;
        if (base < K_INT8 || base > K_STRUCT) {
            PyErr_SetString(PyExc_ValueError, "bad op kind");
            return -1;
        }
        PyObject *sub = PyTuple_GET_ITEM(op, 4);
        if (base == K_STRUCT) {
            o->sub = prog_build(sub);
            if (o->sub == NULL) return -1;
        }
    }
    return 0;
}

static Prog *prog_build(PyObject *spec) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5 || !PyTuple_Check(PyTuple_GET_ITEM(spec, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(spec, 1))) {
        PyErr_SetString(PyExc_TypeError, "spec must be (keys, defaults, plain, tagged, flexible)");
        return NULL;
    }
    Prog *p = PyMem_Calloc(1, sizeof(Prog));
    if (p == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    p->keys = PyTuple_GET_ITEM(spec, 0);
    p->defaults = PyTuple_GET_ITEM(spec, 1);
    p->nslots = PyTuple_GET_SIZE(p->keys);
    if (p->nslots != PyTuple_GET_SIZE(p->defaults)) {
        PyErr_SetString(PyExc_ValueError, "keys and defaults differ in length");
        prog_free(p);
        return NULL;
    }
    p->template = PyDict_New();
    if (p->template == NULL) {
        prog_free(p);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < p->nslots; i++) {
        if (PyDict_SetItem(p->template, PyTuple_GET_ITEM(p->keys, i), PyTuple_GET_ITEM(p->defaults, i)) < 0) {
            prog_free(p);
            return NULL;
        }
    }
    if (PyDict_GET_SIZE(p->template) != p->nslots) {
        PyErr_SetString(PyExc_ValueError, "duplicate keys");
        prog_free(p);
        return NULL;
    }
    p->flexible = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 4));
    if (p->flexible < 0 || ops_build(PyTuple_GET_ITEM(spec, 2), &p->plain, &p->nplain, p->nslots) < 0 ||
        ops_build(PyTuple_GET_ITEM(spec, 3), &p->tagged, &p->ntagged, p->nslots) < 0) {
        prog_free(p);
        return NULL;
    }
    return p;
}

static void capsule_free(PyObject *capsule) { prog_free(PyCapsule_GetPointer(capsule, CAPSULE)); }

static PyObject *compile_program(PyObject *self, PyObject *spec) {
    (void)self;
    Prog *p = prog_build(spec);
    if (p == NULL) return NULL;
    Py_INCREF(spec);
    p->owner = spec; /* keeps every nested keys/defaults tuple alive */
    PyObject *capsule = PyCapsule_New(p, CAPSULE, capsule_free);
    if (capsule == NULL) prog_free(p);
    return capsule;
}

/* -- primitive readers (big-endian, bounds-checked) ---------------------------------------------------- */

static inline uint64_t be(const uint8_t *b, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | b[i];
    return v;
}

/* Unsigned varint of at most 4 bytes (< 2^28); anything longer goes to Python, which owns the 5-byte rules. */
static inline int uvar(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out) {
    uint32_t v = 0;
    Py_ssize_t p = *pos;
    for (int shift = 0; shift < 28; shift += 7) {
        if (p >= end) return BAIL;
        uint8_t c = b[p++];
        v |= (uint32_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *pos = p;
            *out = v;
            return OK;
        }
    }
    return BAIL;
}

/* ZigZag varint of at most 4 bytes. */
static inline int svar(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int32_t *out) {
    uint32_t u;
    if (uvar(b, pos, end, &u) != OK) return BAIL;
    *out = (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
    return OK;
}

/* Skip a varlong of at most 9 bytes (the record timestamp delta: its value is not used). */
static inline int skip_varlong(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end) {
    Py_ssize_t p = *pos;
    for (int i = 0; i < 9; i++) {
        if (p >= end) return BAIL;
        if (!(b[p++] & 0x80)) {
            *pos = p;
            return OK;
        }
    }
    return BAIL;
}

/* -- values ------------------------------------------------------------------------------------------- */

static int read_struct(const Ctx *c, const Prog *p, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int nested,
                       PyObject **out, PyObject **unknown_out);

static const int FIXED_SIZE[] = {1, 2, 4, 8, 2, 1, 8, 16};

static int read_uuid(const Ctx *c, const uint8_t *b, Py_ssize_t pos, PyObject **out) {
    PyObject *raw = PyBytes_FromStringAndSize((const char *)b + pos, 16);
    if (raw == NULL) return ERR;
    PyObject *u = PyDict_GetItemWithError(c->uuid_cache, raw);
    if (u != NULL) {
        Py_INCREF(u);
    } else if (!PyErr_Occurred()) {
        u = PyObject_CallOneArg(c->uuid_factory, raw);
    }
    Py_DECREF(raw);
    *out = u;
    return u == NULL ? ERR : OK;
}

/* One scalar or struct value of `kind` (not an array). */
static int read_one(const Ctx *c, int kind, const Prog *sub, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end,
                    int nullable, PyObject **out) {
    Py_ssize_t p = *pos;
    if (kind <= K_UUID) {
        if (FIXED_SIZE[kind] > end - p) return BAIL;
        const uint8_t *q = b + p;
        *pos = p + FIXED_SIZE[kind];
        switch (kind) {
        case K_INT8: *out = PyLong_FromLong((int8_t)q[0]); break;
        case K_INT16: *out = PyLong_FromLong((int16_t)be(q, 2)); break;
        case K_INT32: *out = PyLong_FromLong((int32_t)be(q, 4)); break;
        case K_INT64: *out = PyLong_FromLongLong((int64_t)be(q, 8)); break;
        case K_UINT16: *out = PyLong_FromLong((long)be(q, 2)); break;
        case K_BOOL: *out = PyBool_FromLong(q[0] != 0); break;
        case K_FLOAT64: {
            double d = PyFloat_Unpack8((const char *)q, 0);
            *out = (d == -1.0 && PyErr_Occurred()) ? NULL : PyFloat_FromDouble(d);
            break;
        }
        default: return read_uuid(c, b, p, out);
        }
        return *out == NULL ? ERR : OK;
    }
    if (kind == K_STRUCT) return read_struct(c, sub, b, pos, end, 1, out, NULL);
    uint32_t n1;
    if (uvar(b, &p, end, &n1) != OK) return BAIL;
    if (n1 == 0) {
        if (!nullable) return BAIL;
        *pos = p;
        *out = Py_NewRef(Py_None);
        return OK;
    }
    Py_ssize_t n = (Py_ssize_t)n1 - 1;
    if (n > end - p) return BAIL;
    *out = kind == K_STRING ? PyUnicode_DecodeUTF8((const char *)b + p, n, "surrogateescape")
                            : PyBytes_FromStringAndSize((const char *)b + p, n);
    if (*out == NULL) return ERR;
    *pos = p + n;
    return OK;
}

static int read_value(const Ctx *c, const Op *op, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end,
                      PyObject **out) {
    if (op->kind < K_ARRAY) return read_one(c, op->kind, op->sub, b, pos, end, op->nullable, out);
    int elem = op->kind - K_ARRAY;
    Py_ssize_t p = *pos;
    uint32_t n1;
    if (uvar(b, &p, end, &n1) != OK) return BAIL;
    if (n1 == 0) {
        if (!op->nullable) return BAIL;
        *pos = p;
        *out = Py_NewRef(Py_None);
        return OK;
    }
    Py_ssize_t n = (Py_ssize_t)n1 - 1;
    Py_ssize_t per = elem <= K_UUID ? FIXED_SIZE[elem] : 1;
    if (n > (end - p) / per) return BAIL;
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return ERR;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v;
        int rc = read_one(c, elem, op->sub, b, &p, end, 0, &v);
        if (rc != OK) {
            Py_DECREF(t);
            return rc;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    *pos = p;
    *out = t;
    return OK;
}

/* A struct body: the top-level message gives a dict and its unknown tags; a nested struct a read-only mapping
 * with its unknown tags under ctx.unknown_key (as metadata_compiler's generated code does). */
static int read_struct(const Ctx *c, const Prog *p, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int nested,
                       PyObject **out, PyObject **unknown_out) {
    PyObject *unknown = NULL;
    PyObject *d = PyDict_Copy(p->template); /* every key at its default, in schema order */
    if (d == NULL) return ERR;
    int rc = OK;
    Py_ssize_t q = *pos;
    for (Py_ssize_t i = 0; i < p->nplain && rc == OK; i++) {
        PyObject *v;
        rc = read_value(c, &p->plain[i], b, &q, end, &v);
        if (rc == OK) {
            if (PyDict_SetItem(d, PyTuple_GET_ITEM(p->keys, p->plain[i].slot), v) < 0) rc = ERR;
            Py_DECREF(v);
        }
    }
    if (rc == OK && p->flexible) {
        uint32_t ntags;
        rc = uvar(b, &q, end, &ntags);
        for (uint32_t t = 0; t < ntags && rc == OK; t++) {
            uint32_t tag, size;
            if (uvar(b, &q, end, &tag) != OK || uvar(b, &q, end, &size) != OK || (Py_ssize_t)size > end - q) {
                rc = BAIL;
                break;
            }
            Py_ssize_t tend = q + size;
            const Op *op = NULL;
            for (Py_ssize_t k = 0; k < p->ntagged; k++) {
                if (p->tagged[k].tag == (long)tag) {
                    op = &p->tagged[k];
                    break;
                }
            }
            if (op != NULL) { /* a repeated tag overwrites, as the generated Python does */
                PyObject *v;
                rc = read_value(c, op, b, &q, end, &v);
                if (rc == OK) {
                    if (PyDict_SetItem(d, PyTuple_GET_ITEM(p->keys, op->slot), v) < 0) rc = ERR;
                    Py_DECREF(v);
                }
                if (rc == OK && q != tend) rc = BAIL;
            } else {
                if (unknown == NULL && (unknown = PyList_New(0)) == NULL) {
                    rc = ERR;
                    break;
                }
                PyObject *pair = Py_BuildValue("(ky#)", (unsigned long)tag, (const char *)b + q, (Py_ssize_t)size);
                if (pair == NULL || PyList_Append(unknown, pair) < 0) rc = ERR;
                Py_XDECREF(pair);
                q = tend;
            }
        }
    }
    PyObject *unk = NULL;
    if (rc == OK) {
        unk = unknown == NULL ? PyTuple_New(0) : PyList_AsTuple(unknown);
        if (unk == NULL) rc = ERR;
    }
    Py_XDECREF(unknown);
    if (rc == OK && nested) {
        if (PyTuple_GET_SIZE(unk) && PyDict_SetItem(d, c->unknown_key, unk) < 0) rc = ERR;
        Py_CLEAR(unk);
        if (rc == OK) Py_SETREF(d, PyDictProxy_New(d));
        if (d == NULL) rc = ERR;
    }
    if (rc != OK) {
        Py_XDECREF(d);
        Py_XDECREF(unk);
        return rc;
    }
    *pos = q;
    *out = d;
    if (!nested) *unknown_out = unk;
    return OK;
}

/* -- records and batches ------------------------------------------------------------------------------- */

/* The record object for the value in b[v, vend): a tiny cached record or a freshly decoded one. */
static int read_record(const Ctx *c, const uint8_t *b, Py_ssize_t v, Py_ssize_t vend, PyObject **out) {
    if (vend - v <= 4) {
        PyObject *raw = PyBytes_FromStringAndSize((const char *)b + v, vend - v);
        if (raw == NULL) return ERR;
        PyObject *found = PyDict_GetItemWithError(c->tiny, raw);
        Py_DECREF(raw);
        if (found == NULL) return PyErr_Occurred() ? ERR : BAIL; /* Python decodes and caches it */
        *out = Py_NewRef(found);
        return OK;
    }
    uint8_t api_key = b[v + 1], version = b[v + 2];
    if (b[v] != 1 || api_key >= 0x80 || version >= 0x80) return BAIL;
    if (api_key >= PyTuple_GET_SIZE(c->programs)) return BAIL;
    PyObject *versions = PyTuple_GET_ITEM(c->programs, api_key);
    if (!PyTuple_Check(versions) || version >= PyTuple_GET_SIZE(versions)) return BAIL;
    PyObject *entry = PyTuple_GET_ITEM(versions, version); /* (name, capsule) or None */
    if (entry == Py_None) return BAIL;
    PyObject *name = PyTuple_GET_ITEM(entry, 0);
    const Prog *p = PyCapsule_GetPointer(PyTuple_GET_ITEM(entry, 1), CAPSULE);
    if (p == NULL) return ERR;
    Py_ssize_t q = v + 3;
    PyObject *fields, *unknown;
    int rc = read_struct(c, p, b, &q, vend, 0, &fields, &unknown);
    if (rc != OK) return rc;
    if (q != vend) {
        Py_DECREF(fields);
        Py_DECREF(unknown);
        return BAIL;
    }
    if (c->raw) { /* FieldsRecord((name, fields)): a tuple subclass built like tuple.__new__ does */
        PyTypeObject *type = (PyTypeObject *)c->fields_record;
        PyObject *r = type->tp_alloc(type, 2);
        Py_DECREF(unknown);
        if (r == NULL) {
            Py_DECREF(fields);
            return ERR;
        }
        PyTuple_SET_ITEM(r, 0, Py_NewRef(name));
        PyTuple_SET_ITEM(r, 1, fields);
        *out = r;
        return OK;
    }
    PyObject *proxy = PyDictProxy_New(fields);
    Py_DECREF(fields);
    if (proxy == NULL) {
        Py_DECREF(unknown);
        return ERR;
    }
    PyObject *args[5] = {NULL, NULL, name, proxy, unknown};
    args[0] = PyLong_FromLong(api_key);
    args[1] = PyLong_FromLong(version);
    *out = (args[0] && args[1]) ? PyObject_Vectorcall(c->new_record, args, 5, NULL) : NULL;
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    Py_DECREF(proxy);
    Py_DECREF(unknown);
    return *out == NULL ? ERR : OK;
}

/* The records of one uncompressed data batch, b[p, pend), appended to `entries`. */
static int read_batch(const Ctx *c, const uint8_t *b, Py_ssize_t p, Py_ssize_t pend, int32_t count, int64_t base,
                      PyObject *ts, PyObject *epoch, PyObject *base_obj, PyObject *entries, int64_t *last) {
    for (int32_t i = 0; i < count; i++) {
        int32_t length, delta, klen, vlen;
        if (svar(b, &p, pend, &length) != OK || length < 0 || length > pend - p) return BAIL;
        Py_ssize_t rend = p + length;
        p += 1; /* attributes */
        if (skip_varlong(b, &p, rend) != OK || svar(b, &p, rend, &delta) != OK) return BAIL;
        if (svar(b, &p, rend, &klen) != OK || klen < -1 || klen > rend - p) return BAIL;
        if (klen > 0) p += klen;
        if (svar(b, &p, rend, &vlen) != OK || vlen < 0 || vlen > rend - p) return BAIL;
        Py_ssize_t v = p, vend = p + vlen;
        p = vend;
        if (p >= rend || b[p] != 0 || p + 1 != rend) return BAIL; /* headers, or size mismatch */
        p = rend;
        PyObject *record;
        int rc = read_record(c, b, v, vend, &record);
        if (rc != OK) return rc;
        if ((delta > 0 && base > INT64_MAX - delta) || (delta < 0 && base < INT64_MIN - delta)) {
            Py_DECREF(record);
            return BAIL; /* Python's offset would not fit in 64 bits */
        }
        int64_t offset = base + delta;
        PyObject *off = PyLong_FromLongLong(offset);
        if (off == NULL) {
            Py_DECREF(record);
            return ERR;
        }
        PyObject *entry;
        if (c->raw) {
            entry = PyTuple_New(6);
            if (entry != NULL) {
                PyTuple_SET_ITEM(entry, 0, off);
                PyTuple_SET_ITEM(entry, 1, Py_NewRef(ts));
                PyTuple_SET_ITEM(entry, 2, Py_NewRef(epoch));
                PyTuple_SET_ITEM(entry, 3, Py_NewRef(Py_False));
                PyTuple_SET_ITEM(entry, 4, record);
                PyTuple_SET_ITEM(entry, 5, Py_NewRef(base_obj));
            } else {
                Py_DECREF(off);
                Py_DECREF(record);
            }
        } else {
            PyObject *args[6] = {off, ts, epoch, Py_False, record, base_obj};
            entry = PyObject_Vectorcall(c->new_entry, args, 6, NULL);
            Py_DECREF(off);
            Py_DECREF(record);
        }
        if (entry == NULL) return ERR;
        rc = PyList_Append(entries, entry);
        Py_DECREF(entry);
        if (rc < 0) return ERR;
        *last = offset;
    }
    return p == pend ? OK : BAIL;
}

static int crc_ok(const Ctx *c, const uint8_t *b, Py_ssize_t from, Py_ssize_t to, uint32_t stored) {
    PyObject *view = PyMemoryView_FromMemory((char *)b + from, to - from, PyBUF_READ);
    if (view == NULL) return ERR;
    PyObject *r = PyObject_CallOneArg(c->crc, view);
    Py_DECREF(view);
    if (r == NULL) return ERR;
    unsigned long crc = PyLong_AsUnsignedLong(r);
    Py_DECREF(r);
    if (crc == (unsigned long)-1 && PyErr_Occurred()) return ERR;
    return crc == stored ? OK : BAIL;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *bufobj, *ctxobj;
    Py_ssize_t pos, end, max_records;
    int raw, verify;
    if (!PyArg_ParseTuple(args, "OnnO!ppn", &bufobj, &pos, &end, &PyTuple_Type, &ctxobj, &raw, &verify,
                          &max_records))
        return NULL;
    Ctx c;
    if (!PyArg_ParseTuple(ctxobj, "O!O!O!OOOOOU", &PyTuple_Type, &c.programs, &PyDict_Type, &c.tiny, &PyDict_Type,
                          &c.uuid_cache, &c.uuid_factory, &c.crc, &c.fields_record, &c.new_entry, &c.new_record,
                          &c.unknown_key))
        return NULL;
    if (!PyType_Check(c.fields_record) || !PyType_IsSubtype((PyTypeObject *)c.fields_record, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "fields_record must be a tuple subclass");
        return NULL;
    }
    c.raw = raw;
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *b = view.buf;
    if (pos < 0 || end > view.len || pos > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "pos/end outside the buffer");
        return NULL;
    }
    PyObject *entries = PyList_New(0);
    Py_ssize_t batches = 0, valid = 0, records = 0;
    int64_t last = 0;
    int rc = entries == NULL ? ERR : OK;
    while (rc == OK && records < max_records && end - pos >= HEADER_UP_TO_MAGIC) {
        const uint8_t *h = b + pos;
        int64_t base = (int64_t)be(h, 8);
        int32_t length = (int32_t)be(h + B_LENGTH, 4);
        if (length < MIN_BATCH_LENGTH || (Py_ssize_t)length > end - pos - LOG_OVERHEAD) break;
        Py_ssize_t size = LOG_OVERHEAD + (Py_ssize_t)length;
        if (h[B_MAGIC] != 2 || size < HEADER_SIZE) break;
        int attributes = (int)be(h + B_ATTRIBUTES, 2);
        int32_t count = (int32_t)be(h + B_COUNT, 4);
        if ((attributes & ATTR_NOT_PLAIN) || count < 0) break;
        if (verify && (rc = crc_ok(&c, b, pos + B_ATTRIBUTES, pos + size, (uint32_t)be(h + B_CRC, 4))) != OK) break;
        PyObject *ts = PyLong_FromLongLong((int64_t)be(h + B_BASE_TS, 8));
        PyObject *epoch = PyLong_FromLong((int32_t)be(h + B_EPOCH, 4));
        PyObject *base_obj = PyLong_FromLongLong(base);
        Py_ssize_t mark = PyList_GET_SIZE(entries);
        int64_t batch_last = last;
        if (ts == NULL || epoch == NULL || base_obj == NULL) {
            rc = ERR;
        } else {
            rc = read_batch(&c, b, pos + HEADER_SIZE, pos + size, count, base, ts, epoch, base_obj, entries,
                            &batch_last);
        }
        Py_XDECREF(ts);
        Py_XDECREF(epoch);
        Py_XDECREF(base_obj);
        if (rc != OK) {
            if (PyList_SetSlice(entries, mark, PyList_GET_SIZE(entries), NULL) < 0) rc = ERR;
            break;
        }
        last = batch_last;
        pos += size;
        batches += 1;
        valid += size;
        records += count;
    }
    PyBuffer_Release(&view);
    if (rc == ERR) {
        Py_XDECREF(entries);
        return NULL;
    }
    if (records == 0) return Py_BuildValue("(NnnnnO)", entries, pos, batches, valid, records, Py_None);
    return Py_BuildValue("(NnnnnL)", entries, pos, batches, valid, records, (long long)last);
}

static PyMethodDef methods[] = {
    {"compile_program", compile_program, METH_O, "Compile one struct program (see the module docstring)."},
    {"scan", scan, METH_VARARGS, "Read the plain record batches from pos (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.kafka._native_metadata",
    "Compiled fast path of a KRaft metadata log scan.", 0, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_metadata(void) { return PyModule_Create(&module); }
