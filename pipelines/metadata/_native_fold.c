/* Compiled twin of metadata/fold.py `fold_pending`: the hot path of PartitionChangeRecord replay.
 *
 * fold(context, changed, fields) -> bool
 *   context = fold.FOLD_CONTEXT: the topic id and partition keys, the nine change keys (partition_merge.CHANGE_KEYS),
 *   the attribute names of a topic change's pending states, the "no leader change" leader, the "keep" leader
 *   recovery state, the attribute names of its changed and base partitions, and partition_merge.pending_change.
 *   When `fields` (an exact dict) changes only ISR, leader, leader recovery state or ELRs of a partition of a topic
 *   in `changed`, folds the change into the partition's pending state (an 8-item list, made by pending_change when
 *   absent) as partition_merge.fold_change does, and returns True. Otherwise it touches nothing and returns False:
 *   the caller replays the record the ordinary (Python) way, which also reports every error. Only values of the
 *   types the decoder produces are taken (exact dict, list, tuple, int): anything else is False.
 *
 * add(context, changed, fields) -> bool
 *   Compiled twin of fold.py `add_partition`, the hot path of PartitionRecord replay for a caller that counts the
 *   partition_added events instead of keeping them. context = fold.ADD_CONTEXT. When `fields` (an exact dict)
 *   registers a partition the topic's change in `changed` does not know yet (not pending, not changed, not in its
 *   base) with the decoder's types and a directory list that fits the replicas, stores the registration
 *   partition_merge.partition_from_record makes in `change.changed` and returns True: the caller then counts the
 *   one partition_added event TopicsDelta.replay_partition would have emitted. Otherwise it touches nothing and
 *   returns False (an error raised here is a memory error, raised before anything is stored). The replicas, ISR,
 *   leader and directories stored are the context's shared values (metadata/shared_values.py): the table is emptied
 *   first when it holds more than the context's bound, then each value is looked up or added.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum { N_CHANGE_KEYS = 9, STATE_SIZE = 8 };
/* positions in the context (fold.FOLD_CONTEXT) */
enum { C_TOPIC_KEY, C_PARTITION_KEY, C_CHANGE_KEYS, C_PENDING, C_NO_LEADER_CHANGE, C_KEEP_RECOVERY, C_CHANGED, C_BASE,
       C_PENDING_CHANGE, CONTEXT_SIZE };
/* positions in the change keys (partition_merge._CHANGE_KEYS) */
enum { REPLICAS, DIRECTORIES, ISR, REMOVING, ADDING, ELR, LAST_KNOWN_ELR, LEADER, RECOVERY };
/* positions in a pending state (partition_merge.pending_change) */
enum { S_ISR = 1, S_LEADER = 2, S_LEADER_CHANGES = 3, S_RECOVERY = 4, S_ELR = 5, S_LAST_KNOWN_ELR = 6, S_CHANGES = 7 };

/* Borrowed value of `key` in the exact dict `d`, or NULL (absent, or a lookup error, which is cleared). */
static PyObject *lookup(PyObject *d, PyObject *key) {
    PyObject *value = PyDict_GetItemWithError(d, key);
    if (value == NULL) PyErr_Clear();
    return value;
}

static int none_or_tuple(PyObject *v) { return v == Py_None || PyTuple_CheckExact(v); }

/* 1 when the exact int `v` differs from `sentinel`, 0 when equal, -1 on error. */
static int differs(PyObject *v, long sentinel) {
    int overflow = 0;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return -1;
    return overflow != 0 || x != sentinel;
}

/* Store `value` (a new reference, stolen) at `list[i]`, then release the old item (after the store, as
 * list.__setitem__ does: an int, tuple or None here, so no code runs). */
static void replace_item(PyObject *list, Py_ssize_t i, PyObject *value) {
    PyObject *old = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, value);
    Py_DECREF(old);
}

static void set_item(PyObject *list, Py_ssize_t i, PyObject *value) {
    Py_INCREF(value);
    replace_item(list, i, value);
}

/* A new reference to `change.pending[partition]`, made with context's pending_change(old) when absent (old from
 * `change.changed`, else `change.base`), or NULL: no such partition, or a value of another type than expected (no
 * error set), or an error of pending_change or of storing its result (error set). */
static PyObject *pending_state(PyObject *context, PyObject *change, PyObject *partition) {
    PyObject *pending = PyObject_GetAttr(change, PyTuple_GET_ITEM(context, C_PENDING));
    PyObject *state = NULL, *old = NULL;
    if (pending == NULL || !PyDict_CheckExact(pending)) goto decline;
    state = lookup(pending, partition);
    if (state != NULL) {
        Py_INCREF(state);
        Py_DECREF(pending);
        return state;
    }
    PyObject *changed = PyObject_GetAttr(change, PyTuple_GET_ITEM(context, C_CHANGED));
    if (changed != NULL && PyDict_CheckExact(changed)) {
        old = lookup(changed, partition);
        Py_XINCREF(old);
    }
    Py_XDECREF(changed);
    if (old == NULL) {
        PyObject *base = PyObject_GetAttr(change, PyTuple_GET_ITEM(context, C_BASE));
        old = base == NULL ? NULL : PyObject_GetItem(base, partition);
        Py_XDECREF(base);
    }
    if (old == NULL || old == Py_None) { /* unknown partition: the ordinary replay reports it */
        Py_XDECREF(old);
        goto decline;
    }
    state = PyObject_CallOneArg(PyTuple_GET_ITEM(context, C_PENDING_CHANGE), old);
    Py_DECREF(old);
    if (state == NULL || PyDict_SetItem(pending, partition, state) < 0) {
        Py_XDECREF(state);
        Py_DECREF(pending);
        return NULL;
    }
    Py_DECREF(pending);
    return state;

decline:
    PyErr_Clear();
    Py_XDECREF(pending);
    return NULL;
}

static PyObject *fold(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "fold() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *context = args[0], *changed = args[1], *fields = args[2];
    if (!PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != CONTEXT_SIZE || !PyDict_CheckExact(changed) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(context, C_CHANGE_KEYS)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(context, C_CHANGE_KEYS)) != N_CHANGE_KEYS) {
        PyErr_SetString(PyExc_TypeError, "fold(): bad context or changed");
        return NULL;
    }
    if (!PyDict_CheckExact(fields)) Py_RETURN_FALSE;
    PyObject *topic_id = lookup(fields, PyTuple_GET_ITEM(context, C_TOPIC_KEY));
    PyObject *change = topic_id == NULL ? NULL : lookup(changed, topic_id);
    PyObject *partition = change == NULL ? NULL : lookup(fields, PyTuple_GET_ITEM(context, C_PARTITION_KEY));
    if (partition == NULL) Py_RETURN_FALSE;
    PyObject *keys = PyTuple_GET_ITEM(context, C_CHANGE_KEYS);
    PyObject *v[N_CHANGE_KEYS];
    for (Py_ssize_t i = 0; i < N_CHANGE_KEYS; i++) {
        v[i] = lookup(fields, PyTuple_GET_ITEM(keys, i));
        if (v[i] == NULL) Py_RETURN_FALSE;
    }
    if (v[REPLICAS] != Py_None || v[DIRECTORIES] != Py_None || v[REMOVING] != Py_None || v[ADDING] != Py_None ||
        !none_or_tuple(v[ISR]) || !none_or_tuple(v[ELR]) || !none_or_tuple(v[LAST_KNOWN_ELR]) ||
        (v[LEADER] != Py_None && !PyLong_CheckExact(v[LEADER])) ||
        (v[RECOVERY] != Py_None && !PyLong_CheckExact(v[RECOVERY])))
        Py_RETURN_FALSE;

    PyObject *state = pending_state(context, change, partition);
    if (state == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    if (!PyList_CheckExact(state) || PyList_GET_SIZE(state) != STATE_SIZE ||
        !PyLong_CheckExact(PyList_GET_ITEM(state, S_LEADER_CHANGES)) ||
        !PyLong_CheckExact(PyList_GET_ITEM(state, S_CHANGES))) {
        Py_DECREF(state);
        Py_RETURN_FALSE;
    }

    /* Everything that can fail comes before the first store: the state is changed wholly or not at all. */
    long no_leader_change = PyLong_AsLong(PyTuple_GET_ITEM(context, C_NO_LEADER_CHANGE));
    long keep_recovery = PyLong_AsLong(PyTuple_GET_ITEM(context, C_KEEP_RECOVERY));
    int new_leader = 0, new_recovery = 0;
    if (PyErr_Occurred()) goto fail;
    if (v[LEADER] != Py_None && (new_leader = differs(v[LEADER], no_leader_change)) < 0) goto fail;
    if (v[RECOVERY] != Py_None && (new_recovery = differs(v[RECOVERY], keep_recovery)) < 0) goto fail;
    PyObject *one = PyLong_FromLong(1);
    if (one == NULL) goto fail;
    PyObject *changes = PyNumber_Add(PyList_GET_ITEM(state, S_CHANGES), one);
    PyObject *leader_changes = new_leader && changes != NULL
                                   ? PyNumber_Add(PyList_GET_ITEM(state, S_LEADER_CHANGES), one)
                                   : NULL;
    Py_DECREF(one);
    if (changes == NULL || (new_leader && leader_changes == NULL)) {
        Py_XDECREF(changes);
        goto fail;
    }

    if (v[ISR] != Py_None) set_item(state, S_ISR, v[ISR]);
    if (new_leader) {
        set_item(state, S_LEADER, v[LEADER]);
        replace_item(state, S_LEADER_CHANGES, leader_changes);
    }
    if (new_recovery) set_item(state, S_RECOVERY, v[RECOVERY]);
    if (v[ELR] != Py_None) set_item(state, S_ELR, v[ELR]);
    if (v[LAST_KNOWN_ELR] != Py_None) set_item(state, S_LAST_KNOWN_ELR, v[LAST_KNOWN_ELR]);
    replace_item(state, S_CHANGES, changes);
    Py_DECREF(state);
    Py_RETURN_TRUE;

fail:
    Py_DECREF(state);
    return NULL;
}

/* positions in the add context (fold.ADD_CONTEXT) */
enum { A_TOPIC_KEY, A_PARTITION_KEY, A_KEYS, A_PENDING, A_CHANGED, A_BASE, A_NEW_PARTITION, A_MIGRATING, A_SHARED,
       A_SHARED_MAX, ADD_CONTEXT_SIZE };
/* positions in the PartitionRecord keys (fold.PARTITION_KEYS) */
enum { P_REPLICAS, P_DIRECTORIES, P_ISR, P_REMOVING, P_ADDING, P_LEADER, P_LEADER_EPOCH, P_PARTITION_EPOCH, P_RECOVERY,
       P_ELR, P_LAST_KNOWN_ELR, N_PARTITION_KEYS };

/* 1 when `key` is a key of the mapping `m` (`key in m`; a KeyError of m[key] means absent), 0 when not, -1 on
 * another error. */
static int has_key(PyObject *m, PyObject *key) {
    if (PyDict_CheckExact(m)) {
        if (PyDict_GetItemWithError(m, key) != NULL) return 1;
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *v = PyObject_GetItem(m, key);
    if (v != NULL) {
        Py_DECREF(v);
        return 1;
    }
    if (PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static PyObject *add(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "add() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *context = args[0], *changed = args[1], *fields = args[2];
    if (!PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != ADD_CONTEXT_SIZE || !PyDict_CheckExact(changed) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(context, A_KEYS)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(context, A_KEYS)) != N_PARTITION_KEYS) {
        PyErr_SetString(PyExc_TypeError, "add(): bad context or changed");
        return NULL;
    }
    if (!PyDict_CheckExact(fields)) Py_RETURN_FALSE;
    PyObject *topic_id = lookup(fields, PyTuple_GET_ITEM(context, A_TOPIC_KEY));
    PyObject *change = topic_id == NULL ? NULL : lookup(changed, topic_id);
    PyObject *partition = change == NULL ? NULL : lookup(fields, PyTuple_GET_ITEM(context, A_PARTITION_KEY));
    if (partition == NULL || !PyLong_CheckExact(partition)) Py_RETURN_FALSE;
    PyObject *keys = PyTuple_GET_ITEM(context, A_KEYS);
    PyObject *v[N_PARTITION_KEYS];
    for (Py_ssize_t i = 0; i < N_PARTITION_KEYS; i++) {
        v[i] = lookup(fields, PyTuple_GET_ITEM(keys, i));
        if (v[i] == NULL) Py_RETURN_FALSE;
    }
    if (!PyTuple_CheckExact(v[P_REPLICAS]) || !none_or_tuple(v[P_DIRECTORIES]) || !none_or_tuple(v[P_ISR]) ||
        !none_or_tuple(v[P_REMOVING]) || !none_or_tuple(v[P_ADDING]) || !none_or_tuple(v[P_ELR]) ||
        !none_or_tuple(v[P_LAST_KNOWN_ELR]) || !PyLong_CheckExact(v[P_LEADER]) ||
        !PyLong_CheckExact(v[P_LEADER_EPOCH]) || !PyLong_CheckExact(v[P_PARTITION_EPOCH]) ||
        !PyLong_CheckExact(v[P_RECOVERY]))
        Py_RETURN_FALSE;
    Py_ssize_t n_replicas = PyTuple_GET_SIZE(v[P_REPLICAS]);
    PyObject *dirs = v[P_DIRECTORIES];
    Py_ssize_t n_dirs = dirs == Py_None ? 0 : PyTuple_GET_SIZE(dirs);
    if (n_dirs != 0 && n_dirs != n_replicas) Py_RETURN_FALSE; /* the ordinary replay reports it */

    /* a partition the change knows (pending, changed or in its base) takes the ordinary path (its events differ) */
    PyObject *pending = PyObject_GetAttr(change, PyTuple_GET_ITEM(context, A_PENDING));
    PyObject *partitions = pending == NULL ? NULL : PyObject_GetAttr(change, PyTuple_GET_ITEM(context, A_CHANGED));
    PyObject *base = partitions == NULL ? NULL : PyObject_GetAttr(change, PyTuple_GET_ITEM(context, A_BASE));
    PyObject *directories = NULL, *new = NULL, *result = NULL;
    if (base == NULL || !PyDict_CheckExact(pending) || !PyDict_CheckExact(partitions)) goto decline;
    int known = has_key(pending, partition);
    if (known == 0) known = has_key(partitions, partition);
    if (known == 0) known = has_key(base, partition);
    if (known != 0) goto decline;

    /* Directories absent, empty or all MIGRATING: MIGRATING x |replicas| (partition_merge._default_to_migrating) */
    int migrating = n_dirs == 0;
    if (!migrating) {
        Py_ssize_t count = PySequence_Count(dirs, PyTuple_GET_ITEM(context, A_MIGRATING));
        if (count < 0) goto fail;
        migrating = count == n_dirs;
    }
    if (migrating) {
        directories = PyTuple_New(n_replicas);
        if (directories == NULL) goto fail;
        for (Py_ssize_t i = 0; i < n_replicas; i++) {
            PyObject *m = PyTuple_GET_ITEM(context, A_MIGRATING);
            Py_INCREF(m);
            PyTuple_SET_ITEM(directories, i, m);
        }
    } else {
        directories = dirs;
        Py_INCREF(directories);
    }
    PyObject *table = PyTuple_GET_ITEM(context, A_SHARED);
    Py_ssize_t bound = PyLong_AsSsize_t(PyTuple_GET_ITEM(context, A_SHARED_MAX));
    if (bound == -1 && PyErr_Occurred()) goto fail;
    if (!PyDict_CheckExact(table)) {
        PyErr_SetString(PyExc_TypeError, "add(): the shared values are not a dict");
        goto fail;
    }
    if (PyDict_GET_SIZE(table) > bound) PyDict_Clear(table); /* once: the values below stay in the table */
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL) goto fail;
    /* borrowed from the table, which keeps them until the registration holds them */
    PyObject *replicas = PyDict_SetDefault(table, v[P_REPLICAS], v[P_REPLICAS]);
    PyObject *isr = replicas == NULL || v[P_ISR] == Py_None ? empty : PyDict_SetDefault(table, v[P_ISR], v[P_ISR]);
    PyObject *leader = isr == NULL ? NULL : PyDict_SetDefault(table, v[P_LEADER], v[P_LEADER]);
    PyObject *dirs_shared = leader == NULL ? NULL : PyDict_SetDefault(table, directories, directories);
    if (dirs_shared == NULL) {
        Py_DECREF(empty);
        goto fail;
    }
#define OR_EMPTY(x) ((x) == Py_None ? empty : (x))
    PyObject *part_args[] = {partition, replicas, isr, OR_EMPTY(v[P_REMOVING]), OR_EMPTY(v[P_ADDING]), leader,
                             v[P_LEADER_EPOCH], v[P_PARTITION_EPOCH], dirs_shared, v[P_RECOVERY],
                             OR_EMPTY(v[P_ELR]), OR_EMPTY(v[P_LAST_KNOWN_ELR])};
#undef OR_EMPTY
    new = PyObject_Vectorcall(PyTuple_GET_ITEM(context, A_NEW_PARTITION), part_args, 12, NULL);
    Py_DECREF(empty);
    if (new == NULL || PyDict_SetItem(partitions, partition, new) < 0) goto fail;
    result = Py_True;
    Py_INCREF(result);
    goto done;
decline:
    PyErr_Clear();
    result = Py_False;
    Py_INCREF(result);
    goto done;
fail:
    result = NULL;
done:
    Py_XDECREF(pending);
    Py_XDECREF(partitions);
    Py_XDECREF(base);
    Py_XDECREF(directories);
    Py_XDECREF(new);
    return result;
}

static PyMethodDef methods[] = {
    {"fold", (PyCFunction)(void (*)(void))fold, METH_FASTCALL,
     "fold(context, changed, fields) -> bool: the compiled twin of metadata.fold.fold_pending."},
    {"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL,
     "add(context, changed, fields) -> bool: the compiled twin of metadata.fold.add_partition."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot module_slots[] = {{0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.metadata._native_fold",
    "Compiled hot path of PartitionChangeRecord replay.", 0, methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_fold(void) { return PyModuleDef_Init(&module); }
