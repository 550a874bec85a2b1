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
 *
 * topics(topics: list, fallback, uuid_type) -> bytes
 * events(events: list, fallback, uuid_type, assignment_type) -> bytes
 *   `metadata show --json`'s texts of topic images (partitions sorted by number) joined by ",\n", and of metadata
 *   events (an AssignmentDetail's detail from its own tuples, a dict's as json.dumps writes it) joined by ", "
 *   (twins: cli/metadata_stream.py `_topic` and `_event`). Any item with a value of another type than the replay
 *   makes is written by `fallback(item)`, the Python text.
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
    if (PUTS(b, "[") != OK) return ERR;
    /* a struct element's default comparison may run Python code: the size and each item are read again */
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(x); i++) {
        if (i && PUTS(b, ", ") != OK) return ERR;
        PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(x, i));
        int rc = put_scalar(b, op->kind - K_ARRAY, op->sub, item, uuid_type);
        Py_DECREF(item);
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

/* -- metadata show --json: topics and events --------------------------------------------------------------- */

static PyObject *s_partitions, *s_topic_id, *s_name, *s_partition, *s_replicas, *s_isr, *s_leader, *s_leader_epoch,
    *s_partition_epoch, *s_directories, *s_adding, *s_removing, *s_elr, *s_last_known_elr, *s_timestamp_ms,
    *s_event, *s_topic, *s_detail, *s_a_replicas, *s_a_directories, *s_a_from_snapshot;

/* An array of exact ints (a tuple or list): str(list(x)), which is its JSON. */
static int put_int_array(Buf *b, PyObject *x) {
    if (!PyTuple_CheckExact(x) && !PyList_CheckExact(x)) return BAIL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(x);
    PyObject **items = PySequence_Fast_ITEMS(x);
    if (PUTS(b, "[") != OK) return ERR;
    for (Py_ssize_t i = 0; i < n; i++) {
        int rc = i ? PUTS(b, ", ") : OK;
        if (rc == OK) rc = put_int(b, items[i]);
        if (rc != OK) return rc;
    }
    return PUTS(b, "]");
}

/* An array of uuids: ["<22 chars>", ...]. */
static int put_uuid_array(Buf *b, PyObject *x, PyObject *uuid_type) {
    if (!PyTuple_CheckExact(x) && !PyList_CheckExact(x)) return BAIL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(x);
    PyObject **items = PySequence_Fast_ITEMS(x);
    if (PUTS(b, "[") != OK) return ERR;
    for (Py_ssize_t i = 0; i < n; i++) {
        int rc = i ? PUTS(b, ", ") : OK;
        if (rc == OK) rc = put_uuid(b, items[i], uuid_type);
        if (rc != OK) return rc;
    }
    return PUTS(b, "]");
}

typedef int (*AttrWriter)(Buf *, PyObject *);

/* `text` then the attribute `name` of `obj` written by `write`. */
static int put_field(Buf *b, const char *text, PyObject *obj, PyObject *name, AttrWriter write) {
    if (put(b, text, (Py_ssize_t)strlen(text)) != OK) return ERR;
    PyObject *x = PyObject_GetAttr(obj, name);
    if (x == NULL) return ERR;
    int rc = write(b, x);
    Py_DECREF(x);
    return rc;
}

static int put_uuid_attr(Buf *b, PyObject *obj, PyObject *name, PyObject *uuid_type, int array) {
    PyObject *x = PyObject_GetAttr(obj, name);
    if (x == NULL) return ERR;
    int rc = array ? put_uuid_array(b, x, uuid_type) : put_uuid(b, x, uuid_type);
    Py_DECREF(x);
    return rc;
}

static int put_partition(Buf *b, PyObject *p, PyObject *uuid_type) {
    int rc = put_field(b, "{\"partition\": ", p, s_partition, put_int);
    if (rc == OK) rc = put_field(b, ", \"replicas\": ", p, s_replicas, put_int_array);
    if (rc == OK) rc = put_field(b, ", \"isr\": ", p, s_isr, put_int_array);
    if (rc == OK) rc = put_field(b, ", \"leader\": ", p, s_leader, put_int);
    if (rc == OK) rc = put_field(b, ", \"leader_epoch\": ", p, s_leader_epoch, put_int);
    if (rc == OK) rc = put_field(b, ", \"partition_epoch\": ", p, s_partition_epoch, put_int);
    if (rc == OK) rc = PUTS(b, ", \"directories\": ");
    if (rc == OK) rc = put_uuid_attr(b, p, s_directories, uuid_type, 1);
    if (rc == OK) rc = put_field(b, ", \"adding_replicas\": ", p, s_adding, put_int_array);
    if (rc == OK) rc = put_field(b, ", \"removing_replicas\": ", p, s_removing, put_int_array);
    if (rc == OK) rc = put_field(b, ", \"elr\": ", p, s_elr, put_int_array);
    if (rc == OK) rc = put_field(b, ", \"last_known_elr\": ", p, s_last_known_elr, put_int_array);
    if (rc == OK) rc = PUTS(b, "}");
    return rc;
}

typedef struct {
    long long key;
    PyObject *p; /* borrowed from the values list */
} Keyed;

/* The partitions of a topic sorted by partition number (stable, as sorted() is): OK, BAIL or ERR. */
static int put_partitions(Buf *b, PyObject *topic, PyObject *uuid_type) {
    PyObject *parts = PyObject_GetAttr(topic, s_partitions);
    if (parts == NULL) return ERR;
    PyObject *values = PyDict_CheckExact(parts) ? PyDict_Values(parts)
                       : Py_TYPE(parts) == &PyDictProxy_Type ? PyMapping_Values(parts) : NULL;
    Py_DECREF(parts);
    if (values == NULL) return PyErr_Occurred() ? ERR : BAIL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    Keyed *keyed = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Keyed));
    int rc = keyed == NULL ? (PyErr_NoMemory(), ERR) : OK;
    for (Py_ssize_t i = 0; rc == OK && i < n; i++) {
        PyObject *p = PyList_GET_ITEM(values, i);
        PyObject *k = PyObject_GetAttr(p, s_partition);
        if (k == NULL) {
            rc = ERR;
            break;
        }
        int overflow = 0;
        long long key = PyLong_CheckExact(k) ? PyLong_AsLongLongAndOverflow(k, &overflow) : 0;
        if (!PyLong_CheckExact(k) || overflow) rc = BAIL;
        Py_DECREF(k);
        Keyed item = {key, p};
        Py_ssize_t j = i; /* insertion sort: partitions come nearly in order */
        while (j > 0 && keyed[j - 1].key > key) {
            keyed[j] = keyed[j - 1];
            j--;
        }
        keyed[j] = item;
    }
    if (rc == OK) rc = PUTS(b, "[");
    for (Py_ssize_t i = 0; rc == OK && i < n; i++) {
        if (i) rc = PUTS(b, ", ");
        if (rc == OK) rc = put_partition(b, keyed[i].p, uuid_type);
    }
    if (rc == OK) rc = PUTS(b, "]");
    PyMem_Free(keyed);
    Py_DECREF(values);
    return rc;
}

static int put_topic(Buf *b, PyObject *t, PyObject *uuid_type) {
    int rc = PUTS(b, "{\"topic_id\": ");
    if (rc == OK) rc = put_uuid_attr(b, t, s_topic_id, uuid_type, 0);
    if (rc == OK) rc = put_field(b, ", \"name\": ", t, s_name, put_string);
    if (rc == OK) rc = PUTS(b, ", \"partitions\": ");
    if (rc == OK) rc = put_partitions(b, t, uuid_type);
    if (rc == OK) rc = PUTS(b, "}");
    return rc;
}

/* json.dumps of a value made of None, bools, exact ints, ASCII strs, lists/tuples and str-keyed dicts. */
static int put_json(Buf *b, PyObject *x, int depth) {
    if (depth > 16) return BAIL;
    if (x == Py_None) return PUTS(b, "null");
    if (x == Py_True) return PUTS(b, "true");
    if (x == Py_False) return PUTS(b, "false");
    if (PyLong_CheckExact(x)) return put_int(b, x);
    if (PyUnicode_CheckExact(x)) return put_string(b, x);
    if (PyTuple_CheckExact(x) || PyList_CheckExact(x)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(x);
        if (PUTS(b, "[") != OK) return ERR;
        for (Py_ssize_t i = 0; i < n; i++) {
            int rc = i ? PUTS(b, ", ") : OK;
            if (rc == OK) rc = put_json(b, PySequence_Fast_ITEMS(x)[i], depth + 1);
            if (rc != OK) return rc;
        }
        return PUTS(b, "]");
    }
    if (PyDict_CheckExact(x)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        int first = 1;
        if (PUTS(b, "{") != OK) return ERR;
        while (PyDict_Next(x, &pos, &k, &v)) {
            if (!PyUnicode_CheckExact(k)) return BAIL;
            int rc = first ? OK : PUTS(b, ", ");
            first = 0;
            if (rc == OK) rc = put_string(b, k);
            if (rc == OK) rc = PUTS(b, ": ");
            if (rc == OK) rc = put_json(b, v, depth + 1);
            if (rc != OK) return rc;
        }
        return PUTS(b, "}");
    }
    return BAIL;
}

/* A partition_added detail, json.dumps(dict(detail)): its replicas, directories and from_snapshot when set. */
static int put_assignment(Buf *b, PyObject *d, PyObject *uuid_type) {
    PyObject *flag = PyObject_GetAttr(d, s_a_from_snapshot);
    if (flag == NULL) return ERR;
    Py_DECREF(flag);
    if (flag != Py_True && flag != Py_False) return BAIL;
    PyObject *replicas = PyObject_GetAttr(d, s_a_replicas);
    if (replicas == NULL) return ERR;
    int rc = PUTS(b, "{\"replicas\": ");
    if (rc == OK) rc = put_int_array(b, replicas);
    Py_DECREF(replicas);
    if (rc == OK) rc = PUTS(b, ", \"directories\": ");
    if (rc == OK) rc = put_uuid_attr(b, d, s_a_directories, uuid_type, 1);
    if (rc == OK && flag == Py_True) rc = PUTS(b, ", \"from_snapshot\": true");
    if (rc == OK) rc = PUTS(b, "}");
    return rc;
}

static int put_optional(Buf *b, PyObject *x, int (*write)(Buf *, PyObject *)) {
    return x == Py_None ? PUTS(b, "null") : write(b, x);
}

static int put_event(Buf *b, PyObject *e, PyObject *uuid_type, PyObject *assignment_type) {
    int rc = put_field(b, "{\"offset\": ", e, s_offset, put_int);
    if (rc == OK) rc = put_field(b, ", \"timestamp_ms\": ", e, s_timestamp_ms, put_int);
    if (rc == OK) rc = put_field(b, ", \"event\": ", e, s_event, put_string);
    if (rc != OK) return rc;
    PyObject *tid = PyObject_GetAttr(e, s_topic_id);
    if (tid == NULL) return ERR;
    rc = PUTS(b, ", \"topic_id\": ");
    if (rc == OK) rc = tid == Py_None ? PUTS(b, "null") : put_uuid(b, tid, uuid_type);
    Py_DECREF(tid);
    PyObject *x = rc == OK ? PyObject_GetAttr(e, s_topic) : NULL;
    if (x == NULL) return rc == OK ? ERR : rc;
    rc = PUTS(b, ", \"topic\": ");
    if (rc == OK) rc = put_optional(b, x, put_string);
    Py_DECREF(x);
    x = rc == OK ? PyObject_GetAttr(e, s_partition) : NULL;
    if (x == NULL) return rc == OK ? ERR : rc;
    rc = PUTS(b, ", \"partition\": ");
    if (rc == OK) rc = put_optional(b, x, put_int);
    Py_DECREF(x);
    x = rc == OK ? PyObject_GetAttr(e, s_detail) : NULL;
    if (x == NULL) return rc == OK ? ERR : rc;
    rc = PUTS(b, ", \"detail\": ");
    if (rc == OK) {
        if ((PyObject *)Py_TYPE(x) == assignment_type) rc = put_assignment(b, x, uuid_type);
        else if (x == Py_None) rc = PUTS(b, "{}");
        else if (PyDict_CheckExact(x)) rc = put_json(b, x, 0);
        else rc = BAIL;
    }
    Py_DECREF(x);
    if (rc == OK) rc = PUTS(b, "}");
    return rc;
}

/* The texts of `items` joined by `sep`; an item this code does not take as it is goes to fallback(item). */
static PyObject *joined(PyObject *items, const char *sep, PyObject *fallback, PyObject *uuid_type,
                        PyObject *assignment_type) {
    Buf b = {NULL, 0, 0};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        int rc = i ? put(&b, sep, (Py_ssize_t)strlen(sep)) : OK;
        Py_ssize_t start = b.len;
        if (rc == OK)
            rc = assignment_type == NULL ? put_topic(&b, item, uuid_type)
                                         : put_event(&b, item, uuid_type, assignment_type);
        if (rc == BAIL) {
            b.len = start;
            PyObject *text = PyObject_CallOneArg(fallback, item);
            PyObject *ascii = text == NULL ? NULL : PyUnicode_AsASCIIString(text);
            Py_XDECREF(text);
            rc = ascii == NULL ? ERR : put_bytes(&b, ascii);
            Py_XDECREF(ascii);
        }
        if (rc != OK) {
            PyMem_Free(b.data);
            return NULL;
        }
    }
    PyObject *out = PyBytes_FromStringAndSize(b.data ? b.data : "", b.len);
    PyMem_Free(b.data);
    return out;
}

static PyObject *topics(PyObject *self, PyObject *args) {
    PyObject *items, *fallback, *uuid_type;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &items, &fallback, &uuid_type)) return NULL;
    return joined(items, ",\n", fallback, uuid_type, NULL);
}

static PyObject *events(PyObject *self, PyObject *args) {
    PyObject *items, *fallback, *uuid_type, *assignment_type;
    if (!PyArg_ParseTuple(args, "O!OOO", &PyList_Type, &items, &fallback, &uuid_type, &assignment_type))
        return NULL;
    return joined(items, ", ", fallback, uuid_type, assignment_type);
}

static PyMethodDef methods[] = {
    {"compile_writer", compile_writer, METH_O, "Compile one record writer (see the module docstring)."},
    {"lines", lines, METH_VARARGS, "The --records lines of a list of log entries (see the module docstring)."},
    {"topics", topics, METH_VARARGS, "The --json texts of a list of topic images, joined by ',\\n'."},
    {"events", events, METH_VARARGS, "The --json texts of a list of metadata events, joined by ', '."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.kafka._native_json", "Compiled metadata show --records lines and --json topics and events.", -1, methods,
};

PyMODINIT_FUNC PyInit__native_json(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_offset, "offset"}, {&s_ts, "batch_timestamp_ms"}, {&s_epoch, "epoch"}, {&s_is_control, "is_control"},
        {&s_record, "record"}, {&s_base, "batch_base_offset"}, {&s_api_key, "api_key"}, {&s_version, "version"},
        {&s_fields, "fields"}, {&s_partitions, "partitions"}, {&s_topic_id, "topic_id"}, {&s_name, "name"},
        {&s_partition, "partition"}, {&s_replicas, "replicas"}, {&s_isr, "isr"}, {&s_leader, "leader"},
        {&s_leader_epoch, "leader_epoch"}, {&s_partition_epoch, "partition_epoch"}, {&s_directories, "directories"},
        {&s_adding, "adding_replicas"}, {&s_removing, "removing_replicas"}, {&s_elr, "elr"},
        {&s_last_known_elr, "last_known_elr"}, {&s_timestamp_ms, "timestamp_ms"}, {&s_event, "event"},
        {&s_topic, "topic"}, {&s_detail, "detail"}, {&s_a_replicas, "_replicas"},
        {&s_a_directories, "_directories"}, {&s_a_from_snapshot, "_from_snapshot"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
