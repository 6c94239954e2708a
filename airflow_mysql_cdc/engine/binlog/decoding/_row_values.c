/*
 * The binlog row image's DATETIME(fsp), TIMESTAMP(fsp) and packed DECIMAL values, compiled.
 *
 * Invariant: each function returns exactly what its pure-Python twin in compiled.py and
 * packed_decimal.py returns for the same bytes (same type, same value, same Decimal exponent,
 * None where the twin gives None), which tests/unit/test_compiled_row_values.py checks over
 * random and edge bytes. They exist because those three readers were a third of the reader
 * thread's time (docs/benchmarks.md, "Where a row's time goes"); the package works without this
 * module (compiled_values.py falls back to the Python readers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>

static PyObject *decimal_type = NULL;     /* decimal.Decimal */
static PyObject *decimal_fallback = NULL; /* packed_decimal.read_decimal(data, at, precision, scale) */

static const int GROUP_BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const unsigned long long POWERS[10] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL};

static int read_buffer(PyObject *data, Py_buffer *view) {
    return PyObject_GetBuffer(data, view, PyBUF_SIMPLE);
}

/* Fractional seconds of fsp digits at p, in microseconds, as compiled._fsp_reader computes them. */
static long long fraction_us(const unsigned char *p, int fsp) {
    int size = (fsp + 1) / 2;
    if (size == 0) return 0;
    long long value = 0;
    for (int i = 0; i < size; i++) value = (value << 8) | p[i];
    if (p[0] & 0x80) value -= (1LL << (8 * size)); /* signed, big-endian */
    if (fsp % 2) value = value / 10;               /* int(value / 10): truncates toward zero */
    static const long long scale[7] = {1000000, 100000, 10000, 1000, 100, 10, 1};
    return value * scale[fsp];
}

static int check_span(Py_buffer *view, Py_ssize_t at, Py_ssize_t size) {
    if (at < 0 || at + size > view->len) {
        PyErr_SetString(PyExc_ValueError, "a row value runs past the end of its event");
        return -1;
    }
    return 0;
}

/* The (data, at, fsp) of a temporal reader whose value takes ``size`` bytes before its fraction:
   copies those bytes and the fraction's (at most 7 + 3) to ``bytes``; -1 with an error set. */
static int temporal_args(PyObject *const *args, Py_ssize_t nargs, const char *usage, int size,
                         unsigned char *bytes, long *fsp) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[1]);
    *fsp = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) return -1;
    if (*fsp < 0 || *fsp > 6) {
        PyErr_SetString(PyExc_ValueError, "fractional seconds precision 0-6");
        return -1;
    }
    Py_buffer view;
    if (read_buffer(args[0], &view) < 0) return -1;
    Py_ssize_t span = size + (*fsp + 1) / 2;
    int result = check_span(&view, at, span);
    if (result == 0) memcpy(bytes, (const unsigned char *)view.buf + at, (size_t)span);
    PyBuffer_Release(&view);
    return result;
}

/* datetime2(data, at, fsp): DATETIME(fsp) as a naive datetime; None for zero and invalid dates. */
static PyObject *datetime2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    unsigned char p[8];
    long fsp;
    if (temporal_args(args, nargs, "datetime2(data, at, fsp)", 5, p, &fsp) < 0) return NULL;
    unsigned long long packed = 0;
    for (int i = 0; i < 5; i++) packed = (packed << 8) | p[i];
    long long micro = fraction_us(p + 5, (int)fsp);
    long year_month = (long)((packed >> 22) & 0x1FFFF);
    if (micro < 0) micro = 0; /* the library ignores a negative fraction */
    PyObject *value = PyDateTime_FromDateAndTime(
        (int)(year_month / 13), (int)(year_month % 13), (int)((packed >> 17) & 0x1F),
        (int)((packed >> 12) & 0x1F), (int)((packed >> 6) & 0x3F), (int)(packed & 0x3F), (int)micro);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear(); /* zero and invalid dates (sql_mode without NO_ZERO_DATE) are null */
        Py_RETURN_NONE;
    }
    return value;
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian), for any sign. */
static void civil_from_days(long long days, int *year, int *month, int *day) {
    days += 719468;
    long long era = (days >= 0 ? days : days - 146096) / 146097;
    long long doe = days - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long y = yoe + era * 400;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = (int)(y + (*month <= 2));
}

/* timestamp2(data, at, fsp): TIMESTAMP(fsp) as a naive UTC datetime; None for the zero TIMESTAMP. */
static PyObject *timestamp2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    unsigned char p[8];
    long fsp;
    if (temporal_args(args, nargs, "timestamp2(data, at, fsp)", 4, p, &fsp) < 0) return NULL;
    long long seconds = ((long long)p[0] << 24) | ((long long)p[1] << 16) | ((long long)p[2] << 8) | p[3];
    if (p[0] & 0x80) seconds -= (1LL << 32);
    long long micro = fraction_us(p + 4, (int)fsp);
    if (micro <= 0 && seconds == 0) Py_RETURN_NONE; /* the zero TIMESTAMP is stored as 0 */
    long long days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
    long long rest = seconds - days * 86400;
    int year, month, day;
    civil_from_days(days, &year, &month, &day);
    return PyDateTime_FromDateAndTime(year, month, day, (int)(rest / 3600), (int)(rest % 3600 / 60),
                                      (int)(rest % 60), micro > 0 ? (int)micro : 0);
}

/* decimal(data, at, precision, scale): packed DECIMAL as the Decimal packed_decimal makes of it. */
static PyObject *packed_decimal(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decimal(data, at, precision, scale)");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[1]);
    long precision = PyLong_AsLong(args[2]);
    long scale = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (precision < 1 || precision > 65 || scale < 0 || scale > 30 || scale > precision) {
        PyErr_SetString(PyExc_ValueError, "DECIMAL precision 1-65 and scale 0-30, at most the precision");
        return NULL;
    }
    long integral = precision - scale;
    int size = (int)((integral / 9) * 4 + GROUP_BYTES[integral % 9] + (scale / 9) * 4 + GROUP_BYTES[scale % 9]);
    Py_buffer view;
    if (read_buffer(args[0], &view) < 0) return NULL;
    if (check_span(&view, at, size) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char bytes[32];
    memcpy(bytes, (const unsigned char *)view.buf + at, (size_t)size);
    PyBuffer_Release(&view);
    int negative = !(bytes[0] & 0x80);
    bytes[0] ^= 0x80;
    if (negative)
        for (int i = 0; i < size; i++) bytes[i] ^= 0xFF;
    /* sign, integral digits, '.', fraction digits: at most 1 + 65 + 1 + 30 */
    char text[104];
    int length = 0, offset = 0;
    if (negative) text[length++] = '-';
    int integral_start = length;
    /* MySQL's order: the integral leftover digits, the integral groups of nine, the fraction's
       groups of nine, the fraction's leftover digits */
    int plan[4][2] = {{(int)(integral % 9), 1}, {9, (int)(integral / 9)}, {9, (int)(scale / 9)}, {(int)(scale % 9), 1}};
    for (int part = 0; part < 4; part++) {
        if (part == 2) {
            int first = integral_start; /* the integral part without leading zeros, at least "0" */
            while (first < length - 1 && text[first] == '0') first++;
            if (length == integral_start) text[length++] = '0';
            else if (first > integral_start) {
                memmove(text + integral_start, text + first, (size_t)(length - first));
                length -= first - integral_start;
            }
            text[length++] = '.';
        }
        int digits = plan[part][0];
        if (digits == 0) continue;
        for (int g = 0; g < plan[part][1]; g++) {
            int width = GROUP_BYTES[digits];
            unsigned long long group = 0;
            for (int i = 0; i < width; i++) group = (group << 8) | bytes[offset + i];
            offset += width;
            if (group >= POWERS[digits]) /* bytes MySQL does not write: the Python reader decides */
                return PyObject_CallFunction(decimal_fallback, "OnII", args[0], at, (unsigned)precision,
                                             (unsigned)scale);
            length += snprintf(text + length, sizeof(text) - (size_t)length, "%0*llu", digits, group);
        }
    }
    PyObject *string = PyUnicode_FromStringAndSize(text, length);
    if (string == NULL) return NULL;
    PyObject *value = PyObject_CallOneArg(decimal_type, string);
    Py_DECREF(string);
    return value;
}

/* use_decimal_fallback(callable): the Python reader for bytes MySQL would not write. */
static PyObject *use_decimal_fallback(PyObject *self, PyObject *callable) {
    Py_XSETREF(decimal_fallback, Py_NewRef(callable));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"datetime2", (PyCFunction)(void (*)(void))datetime2, METH_FASTCALL, "DATETIME(fsp) from a row image."},
    {"timestamp2", (PyCFunction)(void (*)(void))timestamp2, METH_FASTCALL, "TIMESTAMP(fsp) from a row image."},
    {"decimal", (PyCFunction)(void (*)(void))packed_decimal, METH_FASTCALL, "Packed DECIMAL from a row image."},
    {"use_decimal_fallback", use_decimal_fallback, METH_O, "The Python reader of unusual DECIMAL bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_row_values", NULL, -1, methods};

PyMODINIT_FUNC PyInit__row_values(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    PyObject *decimal_module = PyImport_ImportModule("decimal");
    if (decimal_module == NULL) return NULL;
    decimal_type = PyObject_GetAttrString(decimal_module, "Decimal");
    Py_DECREF(decimal_module);
    if (decimal_type == NULL) return NULL;
    return PyModule_Create(&module);
}
