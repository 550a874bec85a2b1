/* Compiled twin of kafka/fast_init.py `fast_constructor`: build a frozen slotted dataclass instance by storing each
 * argument into its slot, as `object.__new__(cls)` followed by each slot descriptor's `__set__` does.
 *
 * maker(cls, descriptors: tuple) -> callable
 *   `descriptors` are the class's member descriptors (`cls.<field>` for each field, in the order the maker takes
 *   its arguments). Each must be a writable object slot (T_OBJECT_EX) of `cls` or a base. The callable takes
 *   exactly len(descriptors) positional arguments and returns the new instance.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    PyObject *descriptors; /* keeps the PyMemberDef pointers below alive */
    Py_ssize_t n;
    PyMemberDef *members[];
} Maker;

static PyObject *maker_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Maker *m = (Maker *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (m->cls == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "maker was cleared");
        return NULL;
    }
    if (nargs != m->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "new_%s() takes exactly %zd positional arguments (%zd given)", m->cls->tp_name,
                     m->n, nargs);
        return NULL;
    }
    PyObject *obj = m->cls->tp_alloc(m->cls, 0);
    if (obj == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (PyMember_SetOne((char *)obj, m->members[i], args[i]) < 0) {
            Py_DECREF(obj);
            return NULL;
        }
    }
    return obj;
}

static int maker_traverse(PyObject *self, visitproc visit, void *arg) {
    Maker *m = (Maker *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(m->cls);
    Py_VISIT(m->descriptors);
    return 0;
}

static int maker_clear(PyObject *self) {
    Maker *m = (Maker *)self;
    Py_CLEAR(m->cls);
    Py_CLEAR(m->descriptors);
    m->n = 0; /* members point into the descriptors: never used again */
    return 0;
}

static void maker_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    maker_clear(self);
    PyObject_GC_Del(self);
    Py_DECREF(type); /* instances of heap types own a reference to their type */
}

static PyMemberDef maker_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Maker, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot maker_slots[] = {
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_traverse, maker_traverse},
    {Py_tp_clear, maker_clear},
    {Py_tp_dealloc, maker_dealloc},
    {Py_tp_members, maker_members},
    {Py_tp_doc, "A fast constructor of one slotted class (see the module docstring)."},
    {0, NULL},
};

static PyType_Spec maker_spec = {
    "pipelines.kafka._native_fastinit.Maker", sizeof(Maker), sizeof(PyMemberDef *),
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, maker_slots,
};

typedef struct {
    PyTypeObject *maker_type;
} State;

static PyObject *maker(PyObject *module, PyObject *args) {
    State *state = PyModule_GetState(module);
    PyObject *cls, *descriptors;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &descriptors)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(descriptors);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(descriptors, i);
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "descriptor %zd is not a slot", i);
            return NULL;
        }
        PyMemberDescrObject *md = (PyMemberDescrObject *)d;
        if (md->d_member->type != T_OBJECT_EX || (md->d_member->flags & READONLY) ||
            !PyType_IsSubtype((PyTypeObject *)cls, PyDescr_TYPE(md))) {
            PyErr_Format(PyExc_TypeError, "descriptor %zd is not a writable object slot of the class", i);
            return NULL;
        }
    }
    Maker *m = PyObject_GC_NewVar(Maker, state->maker_type, n);
    if (m == NULL) return NULL;
    m->vectorcall = maker_call;
    m->cls = (PyTypeObject *)Py_NewRef(cls);
    m->descriptors = Py_NewRef(descriptors);
    m->n = n;
    for (Py_ssize_t i = 0; i < n; i++) m->members[i] = ((PyMemberDescrObject *)PyTuple_GET_ITEM(descriptors, i))->d_member;
    PyObject_GC_Track((PyObject *)m);
    return (PyObject *)m;
}

static PyMethodDef methods[] = {
    {"maker", maker, METH_VARARGS, "A fast constructor of a slotted class (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    State *state = PyModule_GetState(module);
    state->maker_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &maker_spec, NULL);
    return state->maker_type == NULL ? -1 : 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
    State *state = PyModule_GetState(module);
    Py_VISIT(state->maker_type);
    return 0;
}

static int module_clear(PyObject *module) {
    State *state = PyModule_GetState(module);
    Py_CLEAR(state->maker_type);
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pipelines.kafka._native_fastinit",
    "Compiled fast constructors of frozen slotted dataclasses.", sizeof(State), methods, module_slots,
    module_traverse, module_clear, NULL,
};

PyMODINIT_FUNC PyInit__native_fastinit(void) { return PyModuleDef_Init(&module); }
