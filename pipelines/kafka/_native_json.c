/* Compiled writer of `logdir-gc metadata show --records` lines (pure-Python twin: cli/metadata_records.py `_lines`
 * and the writers kafka/metadata_json.py generates; they stay the reference, and a test holds the two together).
 *
 * compile_writer(spec) -> capsule
 *   spec = (head: bytes, ops: tuple[op]); op = (key: bytes, name: str, kind: int, tagged: bool, default, sub)
 *   `head` opens the payload ('{"type": "T", "version": V, "data": ', b"" for a nested struct); each op writes
 *   `key` ('"jsonName": ') and the JSON text of `fields.get(name, default)`, a tagged one only when the value
 *   differs from its default. Kinds are kafka/metadata_native.py KINDS (+ 16 for an array); `sub` is the spec of a
 *   struct or struct array's element.
 *
 * lines(entries, head: bytes, writers, fallback, uuid_type) -> bytes
 *   The lines of `entries` (LogEntry objects), each ending with a newline: `head` ('{"file": NAME, "offset": '),
 *   the entry's numbers and its payload. `writers[api_key][version]` is a capsule or None. Any entry this code does
 *   not take as it is (a control record, no writer, a value of another type than the decoder makes: a non-ASCII
 *   string, bytes, a float, a bool or int subclass...) is written by `fallback(entry)`, the Python line, so the
 *   output is the reference's byte for byte.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

enum {
    K_INT8 = 0, K_INT16 = 1, K_INT32 = 2, K_INT64 = 3, K_UINT16 = 4, K_BOOL = 5, K_FLOAT64 = 6, K_UUID = 7,
    K_STRING = 8, K_BYTES = 9, K_STRUCT = 10, K_ARRAY = 16,
};

#define OK 0
#define BAIL 1 /* this entry needs the Python writer (no exception set) */
#define ERR (-1) /* a Python exception is set */

static const char CAPSULE[] = "pipelines.kafka._native_json.writer";

typedef struct Writer Writer;
typedef struct {
    PyObject *key; /* bytes */
    PyObject *name; /* str */
    int kind;
    int tagged;
    PyObject *deflt;
    Writer *sub;
} Op;

struct Writer {
    PyObject *head; /* bytes */
    Py_ssize_t nops;
    Op *ops;
    PyObject *owner; /* the spec tuple: keeps keys, names and defaults alive */
};

/* -- writers --------------------------------------------------------------------------------------------- */

static void writer_free(Writer *w) {
    if (w == NULL) return;
    for (Py_ssize_t i = 0; i < w->nops; i++) writer_free(w->ops[i].sub);
    PyMem_Free(w->ops);
    Py_XDECREF(w->owner);
    PyMem_Free(w);
}

static Writer *writer_build(PyObject *spec) {
    PyObject *head, *ops;
    if (!PyArg_ParseTuple(spec, "O!O!", &PyBytes_Type, &head, &PyTuple_Type, &ops)) return NULL;
    Writer *w = PyMem_Calloc(1, sizeof(Writer));
    if (w == NULL) return (Writer *)PyErr_NoMemory();
    w->owner = Py_NewRef(spec);
    w->head = head;
    w->nops = PyTuple_GET_SIZE(ops);
    w->ops = PyMem_Calloc(w->nops ? (size_t)w->nops : 1, sizeof(Op));
    if (w->ops == NULL) {
        writer_free(w);
        return (Writer *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < w->nops; i++) {
        Op *op = &w->ops[i];
        PyObject *sub;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ops, i), "O!O!ipOO", &PyBytes_Type, &op->key, &PyUnicode_Type,
                              &op->name, &op->kind, &op->tagged, &op->deflt, &sub)) {
            writer_free(w);
            return NULL;
        }
        if (sub != Py_None && (op->sub = writer_build(sub)) == NULL) {
            writer_free(w);
            return NULL;
        }
    }
    return w;
}

static void capsule_free(PyObject *capsule) { writer_free(PyCapsule_GetPointer(capsule, CAPSULE)); }

static PyObject *compile_writer(PyObject *self, PyObject *spec) {
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "a writer spec is a tuple");
        return NULL;
    }
    Writer *w = writer_build(spec);
    if (w == NULL) return NULL;
    PyObject *capsule = PyCapsule_New(w, CAPSULE, capsule_free);
    if (capsule == NULL) writer_free(w);
    return capsule;
}

/* -- output buffer ----------------------------------------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int grow(Buf *b, Py_ssize_t need) {
    if (b->len + need <= b->cap) return OK;
    Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + need) cap *= 2;
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return ERR;
    }
    b->data = data;
    b->cap = cap;
    return OK;
}

static inline int put(Buf *b, const char *s, Py_ssize_t n) {
    if (grow(b, n) != OK) return ERR;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return OK;
}

#define PUTS(b, s) put((b), (s), (Py_ssize_t)(sizeof(s) - 1))

static inline int put_bytes(Buf *b, PyObject *bytes) {
    return put(b, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
}

static int put_ll(Buf *b, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[sizeof(tmp) - 1 - n++] = '-';
    return put(b, tmp + sizeof(tmp) - n, n);
}

/* str(x) of an exact int that fits 64 bits; anything else is the Python writer's. */
static int put_int(Buf *b, PyObject *x) {
    if (!PyLong_CheckExact(x)) return BAIL;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow) return BAIL;
    if (v == -1 && PyErr_Occurred()) return ERR;
    return put_ll(b, v);
}

/* json.encoder.encode_basestring_ascii of an ASCII str: ", \ and every byte outside ' '..'~' escaped. */
static int put_string(Buf *b, PyObject *x) {
    if (!PyUnicode_CheckExact(x) || !PyUnicode_IS_ASCII(x)) return BAIL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(x);
    const unsigned char *s = PyUnicode_1BYTE_DATA(x);
    if (grow(b, 2 + 6 * n) != OK) return ERR;
    char *o = b->data + b->len;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= ' ' && c <= '~' && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default: {
            static const char hex[] = "0123456789abcdef";
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
        }
    }
    *o++ = '"';
    b->len = o - b->data;
    return OK;
}

/* '"' + str(uuid) + '"': Kafka's 22 characters of unpadded base64url of the 16 big-endian bytes. */
static int put_uuid(Buf *b, PyObject *x, PyObject *uuid_type) {
    if ((PyObject *)Py_TYPE(x) != uuid_type || PyTuple_GET_SIZE(x) != 2) return BAIL;
    PyObject *hi = PyTuple_GET_ITEM(x, 0), *lo = PyTuple_GET_ITEM(x, 1);
    if (!PyLong_CheckExact(hi) || !PyLong_CheckExact(lo)) return BAIL;
    unsigned long long h = PyLong_AsUnsignedLongLong(hi), l = PyLong_AsUnsignedLongLong(lo);
    if (PyErr_Occurred()) {
        PyErr_Clear(); /* a negative or too large half: the Python writer's */
        return BAIL;
    }
    unsigned char raw[18];
    for (int i = 0; i < 8; i++) {
        raw[i] = (unsigned char)(h >> (56 - 8 * i));
        raw[8 + i] = (unsigned char)(l >> (56 - 8 * i));
    }
    raw[16] = raw[17] = 0;
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    if (grow(b, 24) != OK) return ERR;
    char *o = b->data + b->len;
    *o++ = '"';
    for (int i = 0, n = 0; i < 18 && n < 22; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        for (int k = 3; k >= 0 && n < 22; k--, n++) *o++ = alphabet[(v >> (6 * k)) & 63];
    }
    *o++ = '"';
    b->len = o - b->data;
    return OK;
}

static int put_struct(Buf *b, const Writer *w, PyObject *v, PyObject *uuid_type);

static int put_scalar(Buf *b, int kind, const Writer *sub, PyObject *x, PyObject *uuid_type) {
    switch (kind) {
    case K_INT8: case K_INT16: case K_INT32: case K_INT64: case K_UINT16: return put_int(b, x);
    case K_BOOL:
        if (x == Py_True) return PUTS(b, "true");
        if (x == Py_False) return PUTS(b, "false");
        return BAIL;
    case K_UUID: return put_uuid(b, x, uuid_type);
    case K_STRING: return put_string(b, x);
    case K_STRUCT: return put_struct(b, sub, x, uuid_type);
    default: return BAIL; /* bytes, float64: the Python writer's */
    }
}

static int put_value(Buf *b, const Op *op, PyObject *x, PyObject *uuid_type) {
    if (x == Py_None) return PUTS(b, "null");
    if (op->kind < K_ARRAY) return put_scalar(b, op->kind, op->sub, x, uuid_type);
    if (!PyTuple_CheckExact(x) && !PyList_CheckExact(x)) return BAIL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(x);
    PyObject **items = PySequence_Fast_ITEMS(x);
    if (PUTS(b, "[") != OK) return ERR;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && PUTS(b, ", ") != OK) return ERR;
        int rc = put_scalar(b, op->kind - K_ARRAY, op->sub, items[i], uuid_type);
        if (rc != OK) return rc;
    }
    return PUTS(b, "]");
}

/* `fields.get(name, default)` of a dict or a read-only view of one; new reference, NULL with an error set, or
 * *bail set for any other mapping. */
static PyObject *field_of(PyObject *v, const Op *op, int *bail) {
    PyObject *x;
    if (PyDict_CheckExact(v)) {
        x = PyDict_GetItemWithError(v, op->name);
        if (x == NULL && PyErr_Occurred()) return NULL;
        return Py_NewRef(x != NULL ? x : op->deflt);
    }
    if (Py_TYPE(v) != &PyDictProxy_Type) {
        *bail = 1;
        return NULL;
    }
    x = PyObject_GetItem(v, op->name);
    if (x == NULL && PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();
        return Py_NewRef(op->deflt);
    }
    return x;
}

static int put_struct(Buf *b, const Writer *w, PyObject *v, PyObject *uuid_type) {
    if (put_bytes(b, w->head) != OK || PUTS(b, "{") != OK) return ERR;
    int first = 1;
    for (Py_ssize_t i = 0; i < w->nops; i++) {
        const Op *op = &w->ops[i];
        int bail = 0;
        PyObject *x = field_of(v, op, &bail);
        if (x == NULL) return bail ? BAIL : ERR;
        if (op->tagged) {
            int differs = PyObject_RichCompareBool(x, op->deflt, Py_NE);
            if (differs <= 0) {
                Py_DECREF(x);
                if (differs < 0) return ERR;
                continue;
            }
        }
        int rc = first ? OK : PUTS(b, ", ");
        first = 0;
        if (rc == OK) rc = put_bytes(b, op->key);
        if (rc == OK) rc = put_value(b, op, x, uuid_type);
        Py_DECREF(x);
        if (rc != OK) return rc;
    }
    return PUTS(b, "}");
}

/* -- lines --------------------------------------------------------------------------------------------------- */

static PyObject *s_offset, *s_ts, *s_epoch, *s_is_control, *s_record, *s_base, *s_api_key, *s_version, *s_fields;

/* An int attribute of `obj` written with put_int. */
static int put_attr_int(Buf *b, PyObject *obj, PyObject *name) {
    PyObject *x = PyObject_GetAttr(obj, name);
    if (x == NULL) return ERR;
    int rc = put_int(b, x);
    Py_DECREF(x);
    return rc;
}

/* The writer of `record` (borrowed); NULL for none, or with an error set. */
static const Writer *writer_of(PyObject *writers, PyObject *record) {
    PyObject *key = PyObject_GetAttr(record, s_api_key);
    if (key == NULL) return NULL;
    PyObject *version = PyObject_GetAttr(record, s_version);
    if (version == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    const Writer *w = NULL;
    if (PyLong_CheckExact(key) && PyLong_CheckExact(version)) {
        Py_ssize_t k = PyLong_AsSsize_t(key), v = PyLong_AsSsize_t(version);
        if ((k == -1 || v == -1) && PyErr_Occurred()) {
            PyErr_Clear(); /* too large: no writer */
        } else if (k >= 0 && k < PyTuple_GET_SIZE(writers)) {
            PyObject *row = PyTuple_GET_ITEM(writers, k);
            if (PyTuple_Check(row) && v >= 0 && v < PyTuple_GET_SIZE(row) && PyTuple_GET_ITEM(row, v) != Py_None)
                w = PyCapsule_GetPointer(PyTuple_GET_ITEM(row, v), CAPSULE);
        }
    }
    Py_DECREF(key);
    Py_DECREF(version);
    return w;
}

/* One entry's line (without its newline): OK, BAIL or ERR. */
static int put_line(Buf *b, PyObject *entry, PyObject *head, PyObject *writers, PyObject *uuid_type) {
    PyObject *control = PyObject_GetAttr(entry, s_is_control);
    if (control == NULL) return ERR;
    Py_DECREF(control);
    if (control != Py_False) return BAIL;
    PyObject *record = PyObject_GetAttr(entry, s_record);
    if (record == NULL) return ERR;
    int rc;
    const Writer *w = writer_of(writers, record);
    PyObject *fields = w == NULL ? NULL : PyObject_GetAttr(record, s_fields);
    Py_DECREF(record);
    if (w == NULL) return PyErr_Occurred() ? ERR : BAIL;
    if (fields == NULL) return ERR;
    rc = put_bytes(b, head);
    if (rc == OK) rc = put_attr_int(b, entry, s_offset);
    if (rc == OK) rc = PUTS(b, ", \"baseOffset\": ");
    if (rc == OK) rc = put_attr_int(b, entry, s_base);
    if (rc == OK) rc = PUTS(b, ", \"epoch\": ");
    if (rc == OK) rc = put_attr_int(b, entry, s_epoch);
    if (rc == OK) rc = PUTS(b, ", \"timestamp\": ");
    if (rc == OK) rc = put_attr_int(b, entry, s_ts);
    if (rc == OK) rc = PUTS(b, ", \"isControl\": false, \"payload\": ");
    if (rc == OK) rc = put_struct(b, w, fields, uuid_type);
    if (rc == OK) rc = PUTS(b, "}}"); /* the payload's, the line's */
    Py_DECREF(fields);
    return rc;
}

static PyObject *lines(PyObject *self, PyObject *args) {
    PyObject *entries, *head, *writers, *fallback, *uuid_type;
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyList_Type, &entries, &PyBytes_Type, &head, &PyTuple_Type, &writers,
                          &fallback, &uuid_type))
        return NULL;
    Buf b = {NULL, 0, 0};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i);
        Py_ssize_t start = b.len;
        int rc = put_line(&b, entry, head, writers, uuid_type);
        if (rc == BAIL) {
            b.len = start;
            PyObject *text = PyObject_CallOneArg(fallback, entry);
            PyObject *ascii = text == NULL ? NULL : PyUnicode_AsASCIIString(text);
            Py_XDECREF(text);
            rc = ascii == NULL ? ERR : put_bytes(&b, ascii);
            Py_XDECREF(ascii);
        }
        if (rc == OK) rc = PUTS(&b, "\n");
        if (rc != OK) {
            PyMem_Free(b.data);
            return NULL;
        }
    }
    PyObject *out = PyBytes_FromStringAndSize(b.data, b.len);
    PyMem_Free(b.data);
    return out;
}

static PyMethodDef methods[] = {
    {"compile_writer", compile_writer, METH_O, "Compile one record writer (see the module docstring)."},
    {"lines", lines, METH_VARARGS, "The --records lines of a list of log entries (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.kafka._native_json", "Compiled metadata show --records lines.", -1, methods,
};

PyMODINIT_FUNC PyInit__native_json(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_offset, "offset"}, {&s_ts, "batch_timestamp_ms"}, {&s_epoch, "epoch"}, {&s_is_control, "is_control"},
        {&s_record, "record"}, {&s_base, "batch_base_offset"}, {&s_api_key, "api_key"}, {&s_version, "version"},
        {&s_fields, "fields"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
