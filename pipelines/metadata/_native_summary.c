/* Compiled twin of metadata/summary.py `topic_counts`: one pass over every partition of an image's topics.
 *
 * topic_counts(topics) -> (partitions, replicas, under_replicated, offline, reassigning, sizes) | None
 *   topics: a list of TopicImage-like objects (attributes `name` and `partitions`, a mapping whose values() are
 *   PartitionImage-like objects with `replicas`, `isr`, `leader`, `adding_replicas`, `removing_replicas`).
 *   sizes: one (partition count, name, replication factor) tuple per topic, in the order of `topics`, the
 *   replication factor being the longest replica list of the topic (0 without partitions).
 *   Returns None, having computed nothing that anyone sees, when a value is not of the type an image holds
 *   (exact tuples for the replica lists, an exact int leader that fits in a C long, an exact list of topics):
 *   the caller then runs the twin, which also raises whatever the Python code raises.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *s_name, *s_partitions, *s_values, *s_replicas, *s_isr, *s_leader, *s_adding, *s_removing;

/* A new reference to attribute `name` of `obj` when it is an exact tuple, else NULL (error cleared). */
static PyObject *tuple_attr(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyTuple_CheckExact(v)) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* Counts of one partition into the totals; 0 when declined (no error set), -1 on a real error. */
static int count_partition(PyObject *p, Py_ssize_t *replicas, Py_ssize_t *under, Py_ssize_t *offline,
                           Py_ssize_t *moving, Py_ssize_t *rf) {
    PyObject *reps = tuple_attr(p, s_replicas), *isr = NULL, *leader = NULL, *adding = NULL, *removing = NULL;
    int ok = 0;
    if (reps == NULL || (isr = tuple_attr(p, s_isr)) == NULL || (adding = tuple_attr(p, s_adding)) == NULL ||
        (removing = tuple_attr(p, s_removing)) == NULL)
        goto done;
    leader = PyObject_GetAttr(p, s_leader);
    if (leader == NULL) {
        PyErr_Clear();
        goto done;
    }
    if (!PyLong_CheckExact(leader)) goto done;
    int overflow = 0;
    long l = PyLong_AsLongAndOverflow(leader, &overflow);
    if (l == -1 && PyErr_Occurred()) {
        ok = -1;
        goto done;
    }
    if (overflow != 0) goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(reps);
    *replicas += n;
    if (n > *rf) *rf = n;
    if (PyTuple_GET_SIZE(isr) < n) (*under)++;
    if (l < 0) (*offline)++;
    if (PyTuple_GET_SIZE(adding) > 0 || PyTuple_GET_SIZE(removing) > 0) (*moving)++;
    ok = 1;
done:
    Py_XDECREF(reps);
    Py_XDECREF(isr);
    Py_XDECREF(leader);
    Py_XDECREF(adding);
    Py_XDECREF(removing);
    return ok;
}

static PyObject *topic_counts(PyObject *module, PyObject *topics) {
    (void)module;
    if (!PyList_CheckExact(topics)) Py_RETURN_NONE;
    Py_ssize_t partitions = 0, replicas = 0, under = 0, offline = 0, moving = 0;
    Py_ssize_t n_topics = PyList_GET_SIZE(topics);
    PyObject *sizes = PyList_New(n_topics);
    if (sizes == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n_topics; i++) {
        PyObject *topic = PyList_GET_ITEM(topics, i);
        PyObject *name = PyObject_GetAttr(topic, s_name);
        PyObject *parts = name == NULL ? NULL : PyObject_GetAttr(topic, s_partitions);
        PyObject *values = parts == NULL ? NULL : PyObject_CallMethodNoArgs(parts, s_values);
        PyObject *iter = values == NULL ? NULL : PyObject_GetIter(values);
        Py_XDECREF(values);
        Py_XDECREF(parts);
        if (iter == NULL) {
            Py_XDECREF(name);
            goto decline;
        }
        Py_ssize_t count = 0, rf = 0;
        PyObject *p;
        int ok = 1;
        while ((p = PyIter_Next(iter)) != NULL) {
            ok = count_partition(p, &replicas, &under, &offline, &moving, &rf);
            Py_DECREF(p);
            if (ok != 1) break;
            count++;
        }
        Py_DECREF(iter);
        if (ok != 1 || PyErr_Occurred()) {
            Py_DECREF(name);
            if (ok == -1) goto fail;
            goto decline;
        }
        partitions += count;
        PyObject *size = Py_BuildValue("(nNn)", count, name, rf); /* steals name */
        if (size == NULL) goto fail;
        PyList_SET_ITEM(sizes, i, size);
    }
    return Py_BuildValue("(nnnnnN)", partitions, replicas, under, offline, moving, sizes);

decline:
    PyErr_Clear();
    Py_DECREF(sizes);
    Py_RETURN_NONE;
fail:
    Py_DECREF(sizes);
    return NULL;
}

static PyMethodDef methods[] = {
    {"topic_counts", topic_counts, METH_O,
     "topic_counts(topics) -> (partitions, replicas, under, offline, reassigning, sizes) | None: the compiled twin "
     "of metadata.summary.topic_counts."},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *module) {
    (void)module;
    return ((s_name = PyUnicode_InternFromString("name")) == NULL ||
            (s_partitions = PyUnicode_InternFromString("partitions")) == NULL ||
            (s_values = PyUnicode_InternFromString("values")) == NULL ||
            (s_replicas = PyUnicode_InternFromString("replicas")) == NULL ||
            (s_isr = PyUnicode_InternFromString("isr")) == NULL ||
            (s_leader = PyUnicode_InternFromString("leader")) == NULL ||
            (s_adding = PyUnicode_InternFromString("adding_replicas")) == NULL ||
            (s_removing = PyUnicode_InternFromString("removing_replicas")) == NULL)
               ? -1
               : 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, exec_module}, {0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.metadata._native_summary",
    "Compiled partition counts of metadata show's summary.", 0, methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_summary(void) { return PyModuleDef_Init(&module); }
