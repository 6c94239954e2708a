/* MySQL binary JSON (a binlog JSON column's payload) straight to canonical JSON text.
 *
 * Invariant: json_text(payload) is either None or exactly the str that
 * canonical_json(binary_json_value(payload)) returns (binary_json.py and normalise.py). None means
 * "not decided here": the caller runs that pure-Python pair, which then gives the text or raises its
 * own error. This code returns None for everything it does not handle byte for byte: unknown type
 * bytes and bad literals, OPAQUE DECIMALs and temporal values MySQL would not write, any read outside the
 * payload (the Python parser raises there, or slices short without an error), strings and keys that
 * are not strict UTF-8, duplicate keys in one object, lengths over 5 bytes and nesting deeper than
 * MAX_DEPTH. It exists because the Python pair is the reader's largest cost (docs/benchmarks.md).
 *
 * Output rules of canonical_json (json.dumps with sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False, allow_nan=True): keys sorted by code point, which for valid UTF-8 is the order
 * of their bytes; strings keep non-ASCII characters and escape '"', '\\', \b \f \n \r \t and other
 * characters below 0x20 as \u00xx (lowercase hex); floats print as repr(float) and NaN, Infinity,
 * -Infinity; integers in decimal; null, true, false.
 *
 * The text is built as UTF-8 bytes and decoded once at the end with the strict decoder: a string
 * that is not valid UTF-8 stays invalid in the output (every string is enclosed in ASCII quotes, and
 * escapes are ASCII), so the final decode fails exactly when the Python parser's str decode would.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_OBJECT 0x0
#define LARGE_OBJECT 0x1
#define SMALL_ARRAY 0x2
#define LARGE_ARRAY 0x3
#define LITERAL 0x4
#define INT16 0x5
#define UINT16 0x6
#define INT32 0x7
#define UINT32 0x8
#define INT64 0x9
#define UINT64 0xA
#define DOUBLE 0xB
#define STRING 0xC
#define OPAQUE 0xF

/* MySQL refuses documents nested deeper than 100; deeper payloads go to the Python path. */
#define MAX_DEPTH 128

/* Outcomes of the walk: OK, FALLBACK (let the Python pair decide) or ERROR (a Python exception is set:
 * memory only). */
enum { OK = 0, FALLBACK = 1, ERROR = -1 };

typedef struct {
    char *data;
    size_t size;
    size_t capacity;
    char inline_space[512];
} Out;

typedef struct {
    const unsigned char *key;
    size_t key_length;
    size_t entry; /* index of the element's value entry */
} Key;

typedef struct {
    const unsigned char *data;
    size_t length;
} Payload;

static int out_reserve(Out *out, size_t extra) {
    if (out->size + extra <= out->capacity)
        return OK;
    size_t capacity = out->capacity * 2;
    while (capacity < out->size + extra)
        capacity *= 2;
    char *grown;
    if (out->data == out->inline_space) {
        grown = PyMem_Malloc(capacity);
        if (grown != NULL)
            memcpy(grown, out->data, out->size);
    } else {
        grown = PyMem_Realloc(out->data, capacity);
    }
    if (grown == NULL) {
        PyErr_NoMemory();
        return ERROR;
    }
    out->data = grown;
    out->capacity = capacity;
    return OK;
}

static int out_write(Out *out, const char *text, size_t length) {
    if (out_reserve(out, length) != OK)
        return ERROR;
    memcpy(out->data + out->size, text, length);
    out->size += length;
    return OK;
}

static int out_char(Out *out, char c) {
    if (out->size >= out->capacity && out_reserve(out, 1) != OK)
        return ERROR;
    out->data[out->size++] = c;
    return OK;
}

static uint16_t read_u16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t read_u32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t read_u64(const unsigned char *p) {
    return (uint64_t)read_u32(p) | ((uint64_t)read_u32(p + 4) << 32);
}

static int write_unsigned(Out *out, uint64_t value) {
    char digits[24];
    int at = (int)sizeof(digits);
    do {
        digits[--at] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    return out_write(out, digits + at, sizeof(digits) - (size_t)at);
}

static int write_signed(Out *out, int64_t value) {
    if (value < 0) {
        if (out_char(out, '-') != OK)
            return ERROR;
        return write_unsigned(out, (uint64_t)0 - (uint64_t)value);
    }
    return write_unsigned(out, (uint64_t)value);
}

static int write_double(Out *out, double value) {
    if (!isfinite(value)) {
        if (isnan(value))
            return out_write(out, "NaN", 3);
        return value > 0 ? out_write(out, "Infinity", 8) : out_write(out, "-Infinity", 9);
    }
    /* repr(float): what the json module's C encoder prints for a finite float */
    char *text = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL)
        return ERROR;
    int result = out_write(out, text, strlen(text));
    PyMem_Free(text);
    return result;
}

static int write_literal(Out *out, unsigned int byte) {
    switch (byte) {
    case 0:
        return out_write(out, "null", 4);
    case 1:
        return out_write(out, "true", 4);
    case 2:
        return out_write(out, "false", 5);
    default:
        return FALLBACK; /* the Python parser raises BinaryJsonError */
    }
}

static const char HEX[] = "0123456789abcdef";

/* A JSON string of the raw bytes, escaped as the json module's encode_basestring escapes it. */
static int write_string(Out *out, const unsigned char *text, size_t length) {
    /* at most 6 output bytes per input byte, plus the quotes */
    if (out_reserve(out, 6 * length + 2) != OK)
        return ERROR;
    char *to = out->data + out->size;
    *to++ = '"';
    for (size_t i = 0; i < length; i++) {
        unsigned char c = text[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *to++ = (char)c;
            continue;
        }
        *to++ = '\\';
        switch (c) {
        case '"': *to++ = '"'; break;
        case '\\': *to++ = '\\'; break;
        case '\b': *to++ = 'b'; break;
        case '\f': *to++ = 'f'; break;
        case '\n': *to++ = 'n'; break;
        case '\r': *to++ = 'r'; break;
        case '\t': *to++ = 't'; break;
        default:
            *to++ = 'u';
            *to++ = '0';
            *to++ = '0';
            *to++ = HEX[c >> 4];
            *to++ = HEX[c & 0xF];
        }
    }
    *to++ = '"';
    out->size = (size_t)(to - out->data);
    return OK;
}

/* A length of 7-bit groups at `at`; FALLBACK when it runs off the payload or past 5 bytes. */
static int read_length(const Payload *payload, size_t *at, size_t *length) {
    uint64_t value = 0;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (*at >= payload->length)
            return FALLBACK;
        unsigned char byte = payload->data[(*at)++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *length = (size_t)value;
            return OK;
        }
    }
    return FALLBACK;
}

/* A length-prefixed run of bytes at ``at``: where it starts and how long it is. */
static int read_counted(const Payload *payload, size_t at, const unsigned char **raw, size_t *length) {
    int result = read_length(payload, &at, length);
    if (result != OK)
        return result;
    if (*length > payload->length - at)
        return FALLBACK; /* Python slices it short without an error */
    *raw = payload->data + at;
    return OK;
}

static int write_string_at(Out *out, const Payload *payload, size_t at) {
    const unsigned char *raw;
    size_t length;
    int result = read_counted(payload, at, &raw, &length);
    return result != OK ? result : write_string(out, raw, length);
}

static int write_value(Out *out, const Payload *payload, unsigned int kind, size_t at, int depth);

/* --- OPAQUE values (binary_json._opaque) --------------------------------------------------------- */

#define TYPE_DECIMAL 0
#define TYPE_TIMESTAMP 7
#define TYPE_DATE 10
#define TYPE_TIME 11
#define TYPE_DATETIME 12
#define TYPE_NEWDATE 14
#define TYPE_TIMESTAMP2 17
#define TYPE_DATETIME2 18
#define TYPE_TIME2 19
#define TYPE_NEWDECIMAL 246

static const int GROUP_BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POWERS_OF_TEN[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
                                           1000000000};

/* A packed DECIMAL (precision, scale, then MySQL's decimal2bin bytes) printed as float(Decimal):
 * the digits as text, then the correctly rounded conversion Decimal.__float__ also makes of them.
 * FALLBACK for what MySQL never writes (a bad precision or scale, a digit group over its digits)
 * and for a value cut short, where the Python reader silently reads fewer bytes. */
static int write_decimal(Out *out, const unsigned char *raw, size_t length) {
    if (length < 2)
        return FALLBACK;
    int precision = raw[0], scale = raw[1];
    if (precision < 1 || precision > 65 || scale > precision)
        return FALLBACK;
    int integral = precision - scale;
    size_t size = (size_t)((integral / 9) * 4 + GROUP_BYTES[integral % 9] + (scale / 9) * 4 + GROUP_BYTES[scale % 9]);
    if (length - 2 < size)
        return FALLBACK;
    unsigned char bytes[40]; /* at most 65 digits: 8 groups of 4 bytes and two leftovers */
    memcpy(bytes, raw + 2, size);
    int negative = !(bytes[0] & 0x80);
    if (negative) {
        for (size_t i = 0; i < size; i++)
            bytes[i] ^= 0xFF;
    }
    bytes[0] &= 0x7F;
    /* (bytes, digits) of each group, most significant first, as in packed_decimal.py */
    int chunks[20][2], count = 0, integral_chunks;
    if (integral % 9)
        chunks[count][0] = GROUP_BYTES[integral % 9], chunks[count++][1] = integral % 9;
    for (int i = 0; i < integral / 9; i++)
        chunks[count][0] = 4, chunks[count++][1] = 9;
    integral_chunks = count;
    for (int i = 0; i < scale / 9; i++)
        chunks[count][0] = 4, chunks[count++][1] = 9;
    if (scale % 9)
        chunks[count][0] = GROUP_BYTES[scale % 9], chunks[count++][1] = scale % 9;
    char text[100];
    int used = 0;
    if (negative)
        text[used++] = '-';
    text[used++] = '0'; /* the integral part of DECIMAL(s, s) */
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        uint32_t group = 0;
        for (int b = 0; b < chunks[i][0]; b++)
            group = (group << 8) | bytes[at++];
        int digits = chunks[i][1];
        if (group >= POWERS_OF_TEN[digits])
            return FALLBACK;
        if (i == integral_chunks)
            text[used++] = '.';
        for (int d = digits - 1; d >= 0; d--) {
            text[used + d] = (char)('0' + group % 10);
            group /= 10;
        }
        used += digits;
    }
    text[used] = '\0';
    double value = PyOS_string_to_double(text, NULL, NULL);
    if (value == -1.0 && PyErr_Occurred())
        return ERROR;
    return write_double(out, value);
}

/* MySQL's packed temporal value (TIME_to_longlong_*_packed) as binary_json._temporal_text prints it. */
static int write_temporal(Out *out, unsigned int field_type, const unsigned char *raw, size_t length) {
    if (length < 8)
        return FALLBACK; /* the Python reader takes the fewer bytes as the value */
    int64_t packed = (int64_t)read_u64(raw);
    if (packed == INT64_MIN)
        return FALLBACK;
    const char *sign = packed < 0 ? "-" : "";
    uint64_t magnitude = (uint64_t)(packed < 0 ? -packed : packed);
    uint64_t whole = magnitude >> 24;
    unsigned long long microsecond = magnitude & 0xFFFFFF;
    unsigned long long second = whole & 0x3F, minute = (whole >> 6) & 0x3F;
    char text[96];
    int used;
    if (field_type == TYPE_TIME || field_type == TYPE_TIME2) {
        used = snprintf(text, sizeof(text), "%s%02llu:%02llu:%02llu.%06llu", sign,
                        (unsigned long long)((whole >> 12) & 0x3FF), minute, second, microsecond);
    } else {
        unsigned long long year_month = whole >> 22, day = (whole >> 17) & 0x1F;
        used = snprintf(text, sizeof(text), "%04llu-%02llu-%02llu", year_month / 13, year_month % 13, day);
        if (field_type != TYPE_DATE && field_type != TYPE_NEWDATE)
            used += snprintf(text + used, sizeof(text) - (size_t)used, " %02llu:%02llu:%02llu.%06llu",
                             (unsigned long long)((whole >> 12) & 0x1F), minute, second, microsecond);
    }
    return write_string(out, (const unsigned char *)text, (size_t)used);
}

static const char BASE64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Any other opaque value: MySQL's "base64:typeN:<standard base64 with padding>". */
static int write_base64(Out *out, unsigned int field_type, const unsigned char *raw, size_t length) {
    if (out_reserve(out, 24 + 4 * (length / 3 + 1)) != OK)
        return ERROR;
    char *to = out->data + out->size;
    to += sprintf(to, "\"base64:type%u:", field_type);
    size_t i = 0;
    for (; i + 3 <= length; i += 3) {
        uint32_t triple = ((uint32_t)raw[i] << 16) | ((uint32_t)raw[i + 1] << 8) | raw[i + 2];
        *to++ = BASE64[triple >> 18];
        *to++ = BASE64[(triple >> 12) & 0x3F];
        *to++ = BASE64[(triple >> 6) & 0x3F];
        *to++ = BASE64[triple & 0x3F];
    }
    if (length - i == 1) {
        uint32_t triple = (uint32_t)raw[i] << 16;
        *to++ = BASE64[triple >> 18];
        *to++ = BASE64[(triple >> 12) & 0x3F];
        *to++ = '=';
        *to++ = '=';
    } else if (length - i == 2) {
        uint32_t triple = ((uint32_t)raw[i] << 16) | ((uint32_t)raw[i + 1] << 8);
        *to++ = BASE64[triple >> 18];
        *to++ = BASE64[(triple >> 12) & 0x3F];
        *to++ = BASE64[(triple >> 6) & 0x3F];
        *to++ = '=';
    }
    *to++ = '"';
    out->size = (size_t)(to - out->data);
    return OK;
}

static int write_opaque(Out *out, const Payload *payload, size_t at) {
    if (at >= payload->length)
        return FALLBACK;
    unsigned int field_type = payload->data[at++];
    const unsigned char *raw;
    size_t length;
    int result = read_counted(payload, at, &raw, &length);
    if (result != OK)
        return result;
    switch (field_type) {
    case TYPE_DECIMAL:
    case TYPE_NEWDECIMAL:
        return write_decimal(out, raw, length);
    case TYPE_DATE:
    case TYPE_NEWDATE:
    case TYPE_DATETIME:
    case TYPE_DATETIME2:
    case TYPE_TIMESTAMP:
    case TYPE_TIMESTAMP2:
    case TYPE_TIME:
    case TYPE_TIME2:
        return write_temporal(out, field_type, raw, length);
    default:
        return write_base64(out, field_type, raw, length);
    }
}

static int compare_keys(const void *left, const void *right) {
    const Key *a = left, *b = right;
    size_t common = a->key_length < b->key_length ? a->key_length : b->key_length;
    int order = memcmp(a->key, b->key, common);
    if (order)
        return order;
    return (a->key_length > b->key_length) - (a->key_length < b->key_length);
}

static int write_container(Out *out, const Payload *payload, size_t base, unsigned int kind, int depth) {
    if (depth > MAX_DEPTH)
        return FALLBACK;
    int small = kind == SMALL_OBJECT || kind == SMALL_ARRAY;
    int is_object = kind == SMALL_OBJECT || kind == LARGE_OBJECT;
    size_t header = small ? 4 : 8;
    if (base > payload->length || payload->length - base < header)
        return FALLBACK;
    const unsigned char *start = payload->data + base;
    uint64_t count = small ? read_u16(start) : read_u32(start);
    uint64_t key_entry = small ? 4 : 6, value_entry = small ? 3 : 5;
    uint64_t entries = count * ((is_object ? key_entry : 0) + value_entry);
    if (entries > payload->length - base - header)
        return FALLBACK; /* struct.error in the Python parser */
    const unsigned char *keys_at = start + header;
    const unsigned char *values_at = keys_at + (is_object ? count * key_entry : 0);
    size_t n = (size_t)count;

    Key inline_keys[16];
    Key *keys = NULL;
    if (is_object && n) {
        keys = n <= 16 ? inline_keys : PyMem_Malloc(n * sizeof(Key));
        if (keys == NULL) {
            PyErr_NoMemory();
            return ERROR;
        }
        for (size_t i = 0; i < n; i++) {
            const unsigned char *entry = keys_at + i * key_entry;
            uint64_t offset = small ? read_u16(entry) : read_u32(entry);
            uint64_t length = read_u16(entry + (small ? 2 : 4));
            if (offset > payload->length - base || length > payload->length - base - offset) {
                if (keys != inline_keys)
                    PyMem_Free(keys);
                return FALLBACK; /* Python slices the key short */
            }
            keys[i].key = start + offset;
            keys[i].key_length = (size_t)length;
            keys[i].entry = i;
        }
        if (n > 1) {
            qsort(keys, n, sizeof(Key), compare_keys);
            for (size_t i = 1; i < n; i++) {
                if (compare_keys(&keys[i - 1], &keys[i]) == 0) {
                    if (keys != inline_keys)
                        PyMem_Free(keys);
                    return FALLBACK; /* dict() keeps the last duplicate's value */
                }
            }
        }
    }

    int result = out_char(out, is_object ? '{' : '[');
    for (size_t i = 0; result == OK && i < n; i++) {
        if (i && (result = out_char(out, ',')) != OK)
            break;
        size_t element = i;
        if (is_object) {
            if ((result = write_string(out, keys[i].key, keys[i].key_length)) != OK)
                break;
            if ((result = out_char(out, ':')) != OK)
                break;
            element = keys[i].entry;
        }
        const unsigned char *entry = values_at + element * value_entry;
        unsigned int value_kind = entry[0];
        uint32_t raw = small ? read_u16(entry + 1) : read_u32(entry + 1);
        switch (value_kind) {
        case LITERAL:
            result = write_literal(out, raw & 0xFF);
            break;
        case INT16:
            result = write_signed(out, (int16_t)(uint16_t)(raw & 0xFFFF));
            break;
        case UINT16:
            result = write_unsigned(out, raw & 0xFFFF);
            break;
        case INT32:
            result = small ? write_value(out, payload, value_kind, base + raw, depth)
                           : write_signed(out, (int32_t)raw);
            break;
        case UINT32:
            result = small ? write_value(out, payload, value_kind, base + raw, depth) : write_unsigned(out, raw);
            break;
        default:
            result = write_value(out, payload, value_kind, base + raw, depth);
        }
    }
    if (keys != NULL && keys != inline_keys)
        PyMem_Free(keys);
    if (result != OK)
        return result;
    return out_char(out, is_object ? '}' : ']');
}

/* The value of type `kind` stored at absolute offset `at` (not inlined). */
static int write_value(Out *out, const Payload *payload, unsigned int kind, size_t at, int depth) {
    size_t left = at <= payload->length ? payload->length - at : 0;
    switch (kind) {
    case STRING:
        return write_string_at(out, payload, at);
    case SMALL_OBJECT:
    case LARGE_OBJECT:
    case SMALL_ARRAY:
    case LARGE_ARRAY:
        return write_container(out, payload, at, kind, depth + 1);
    case LITERAL:
        return left >= 1 ? write_literal(out, payload->data[at]) : FALLBACK;
    case INT16:
        return left >= 2 ? write_signed(out, (int16_t)read_u16(payload->data + at)) : FALLBACK;
    case UINT16:
        return left >= 2 ? write_unsigned(out, read_u16(payload->data + at)) : FALLBACK;
    case INT32:
        return left >= 4 ? write_signed(out, (int32_t)read_u32(payload->data + at)) : FALLBACK;
    case UINT32:
        return left >= 4 ? write_unsigned(out, read_u32(payload->data + at)) : FALLBACK;
    case INT64:
        return left >= 8 ? write_signed(out, (int64_t)read_u64(payload->data + at)) : FALLBACK;
    case UINT64:
        return left >= 8 ? write_unsigned(out, read_u64(payload->data + at)) : FALLBACK;
    case DOUBLE:
        if (left >= 8) {
            uint64_t bits = read_u64(payload->data + at);
            double value;
            memcpy(&value, &bits, sizeof(value));
            return write_double(out, value);
        }
        return FALLBACK;
    case OPAQUE:
        return write_opaque(out, payload, at);
    default:
        return FALLBACK; /* not a binary JSON type: the Python parser raises BinaryJsonError */
    }
}

static PyObject *json_text(PyObject *module, PyObject *argument) {
    (void)module;
    /* bytes only (what the row reader slices): for anything else, or an empty payload, the Python
     * pair decides, and raises what it raises */
    if (!PyBytes_Check(argument) || PyBytes_GET_SIZE(argument) == 0)
        Py_RETURN_NONE;
    Payload payload = {(const unsigned char *)PyBytes_AS_STRING(argument), (size_t)PyBytes_GET_SIZE(argument)};
    Out out;
    out.data = out.inline_space;
    out.size = 0;
    out.capacity = sizeof(out.inline_space);
    int result = write_value(&out, &payload, payload.data[0], 1, 0);
    PyObject *text = NULL;
    if (result == OK) {
        text = PyUnicode_DecodeUTF8(out.data, (Py_ssize_t)out.size, "strict");
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear(); /* the Python parser raises UnicodeDecodeError */
            text = Py_None;
            Py_INCREF(text);
        }
    } else if (result == FALLBACK) {
        text = Py_None;
        Py_INCREF(text);
    }
    if (out.data != out.inline_space)
        PyMem_Free(out.data);
    return text;
}

static PyMethodDef methods[] = {
    {"json_text", json_text, METH_O,
     "json_text(payload, /)\n--\n\n"
     "canonical_json(binary_json_value(payload)), or None where the pure-Python pair must decide."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_json_text",
    "MySQL binary JSON to canonical JSON text in C (see airflow_mysql_cdc/engine/binlog/decoding/json_text.py).",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__json_text(void) { return PyModuleDef_Init(&module); }
