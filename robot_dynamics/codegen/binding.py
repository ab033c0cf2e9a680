"""A CPython extension around the generated functions: the fast path of
:class:`robot_dynamics.codegen.compiled.CompiledModel` for one state.

A call through ctypes costs 5-15 us (building the arguments' pointers);
this wrapper takes the arrays through the buffer protocol and calls the C
function in about a microsecond. It handles one case only, a C-contiguous
float64 state of the model's size and an output of the right shape, and
answers 0 (done), 1 (not that case: the caller takes the general path) or
2 (a value is not finite: the caller's general path says which). It is
built into the same shared object as the generated code when Python's
headers are installed (``Python.h``, python3-dev); without them rd.compile
uses ctypes alone.
"""
import sysconfig
from pathlib import Path

from ..model.configuration import QUATERNION_TOLERANCE

# name: (C function, inputs (q first: NQ values; the others NV), output is the NV x NV matrix)
CALLS = (("rnea", 3, False), ("gravity", 1, False), ("coriolis", 2, False), ("mass_matrix", 1, True),
         ("aba", 3, False))


def python_include():
    """The folder of ``Python.h``, or None when the headers are not installed."""
    folder = sysconfig.get_paths().get("include")
    return folder if folder and (Path(folder) / "Python.h").is_file() else None


def source(prefix, module, floating=False):
    """C source of the extension module ``module`` calling ``prefix``'s functions.
    ``floating``: q holds a base quaternion at q[3:7], whose norm must be within
    QUATERNION_TOLERANCE of 1 (else status 2: the general path refuses it by name)."""
    P = prefix
    quaternion = (["    if (got == nin + 1) {",
                   "        const double *q = (const double *)b[0].buf;",
                   "        double nq = sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]);",
                   "        if (!(fabs(nq - 1.0) <= %r))" % QUATERNION_TOLERANCE,
                   "            bad_quaternion = 1;",
                   "    }"] if floating else [])
    cases = []
    for k, (name, nin, _) in enumerate(CALLS):
        args = ", ".join("b[%d].buf" % i for i in range(nin + 1))
        cases.append("    case %d: %s_%s(%s); break;" % (k, P, name, args))
    methods = []
    wrappers = []
    for k, (name, nin, _) in enumerate(CALLS):
        wrappers.append(
            "static PyObject *py_%s(PyObject *self, PyObject *const *args, Py_ssize_t nargs)\n"
            "{\n    (void)self;\n    return dispatch(args, nargs, %d);\n}\n" % (name, k))
        methods.append('    {"%s", (PyCFunction)(void (*)(void))py_%s, METH_FASTCALL, '
                       '"%s(inputs..., out) -> 0 done, 1 not a single float64 state, 2 not finite"},'
                       % (name, name, name))
    return "\n".join([
        "/* CPython binding of %s.c (robot_dynamics.codegen.binding). */" % P,
        "#define PY_SSIZE_T_CLEAN",
        "#include <Python.h>",
        "#include <math.h>",
        "#include <string.h>",
        '#include "%s.h"' % P,
        "",
        "static const int n_inputs[%d] = {%s};" % (len(CALLS), ", ".join(str(n) for _, n, _ in CALLS)),
        "static const int matrix_output[%d] = {%s};" % (len(CALLS), ", ".join(str(int(m)) for *_, m in CALLS)),
        "",
        "/* 1 if o is a C-contiguous float64 array of ndim dimensions and size doubles. */",
        "static int view(PyObject *o, Py_buffer *b, int ndim, Py_ssize_t size, int flags)",
        "{",
        "    if (PyObject_GetBuffer(o, b, flags | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {",
        "        PyErr_Clear();",
        "        return 0;",
        "    }",
        "    if (b->ndim != ndim || b->len != size * (Py_ssize_t)sizeof(double) || b->itemsize != sizeof(double)",
        '        || b->format == NULL || strcmp(b->format, "d") != 0) {',
        "        PyBuffer_Release(b);",
        "        return 0;",
        "    }",
        "    return 1;",
        "}",
        "",
        "static int all_finite(const Py_buffer *b)",
        "{",
        "    const double *x = (const double *)b->buf;",
        "    Py_ssize_t k, n = b->len / (Py_ssize_t)sizeof(double);",
        "    for (k = 0; k < n; ++k)",
        "        if (!isfinite(x[k]))",
        "            return 0;",
        "    return 1;",
        "}",
        "",
        "static PyObject *dispatch(PyObject *const *args, Py_ssize_t nargs, int which)",
        "{",
        "    Py_buffer b[4];",
        "    const Py_ssize_t nq = %s_NQ, n = %s_NV;" % (P, P),
        "    int k, got = 0, status = 1, bad_quaternion = 0, nin = n_inputs[which];",
        "    if (nargs != nin + 1) {",
        '        PyErr_Format(PyExc_TypeError, "expected %d arrays, got %zd", nin + 1, nargs);',
        "        return NULL;",
        "    }",
        "    for (k = 0; k <= nin; ++k) {",
        "        int out = k == nin, matrix = out && matrix_output[which];",
        "        if (!view(args[k], &b[k], matrix ? 2 : 1, matrix ? n * n : k == 0 ? nq : n, out ? PyBUF_WRITABLE : 0))",
        "            break;",
        "        ++got;",
        "    }",
        *quaternion,
        "    if (got == nin + 1 && bad_quaternion)",
        "        status = 2;",
        "    else if (got == nin + 1) {",
        "        switch (which) {",
        *cases,
        "        default: break;",
        "        }",
        "        status = 0;",
        "        for (k = 0; k <= nin; ++k)",
        "            if (!all_finite(&b[k]))",
        "                status = 2;",
        "    }",
        "    for (k = 0; k < got; ++k)",
        "        PyBuffer_Release(&b[k]);",
        "    return PyLong_FromLong(status);",
        "}",
        "",
        *wrappers,
        "static PyMethodDef methods[] = {",
        *methods,
        "    {NULL, NULL, 0, NULL}",
        "};",
        "",
        "static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"%s\", NULL, -1, methods, NULL, NULL, NULL, NULL};"
        % module,
        "",
        "PyMODINIT_FUNC PyInit_%s(void)" % module,
        "{",
        "    return PyModule_Create(&module);",
        "}",
        ""])


def load(module, path):
    """Import the extension module ``module`` from the shared object ``path``."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.ExtensionFileLoader(module, str(path))
    spec = importlib.util.spec_from_file_location(module, str(path), loader=loader)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
