/* SPDX-License-Identifier: MIT */
/* The safetensors reader (engine/weights/safetensors.h). */
#include "weights/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arbench/status.h"

static const struct {
    const char *name;
    arb_st_dtype_t dt;
    size_t size;
} dtypes[] = {
    {"BF16", ARB_ST_BF16, 2}, {"F16", ARB_ST_F16, 2},         {"F32", ARB_ST_F32, 4},
    {"I64", ARB_ST_I64, 8},   {"I32", ARB_ST_I32, 4},         {"U8", ARB_ST_U8, 1},
    {"I8", ARB_ST_I8, 1},     {"F8_E4M3", ARB_ST_F8_E4M3, 1}, {"BOOL", ARB_ST_BOOL, 1},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

size_t arb_st_dtype_size(arb_st_dtype_t dt)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtypes[i].dt == dt)
            return dtypes[i].size;
    return 0;
}

const char *arb_st_dtype_name(arb_st_dtype_t dt)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtypes[i].dt == dt)
            return dtypes[i].name;
    return "?";
}

arb_status_t arb_st_dtype_parse(const char *s, arb_st_dtype_t *dt)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(dtypes[i].name, s) == 0) {
            *dt = dtypes[i].dt;
            return ARB_OK;
        }
    return ARB_ERR_INVALID;
}

uint64_t arb_st_numel(const arb_st_tensor_t *t)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const arb_st_tensor_t *)a)->name, ((const arb_st_tensor_t *)b)->name);
}

static int by_begin(const void *a, const void *b)
{
    const arb_st_tensor_t *x = *(const arb_st_tensor_t *const *)a, *y = *(const arb_st_tensor_t *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* A non-negative JSON integer. */
static int get_u64(json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* One header entry into t (name already set); data_len = bytes after the header. */
static arb_status_t parse_entry(const char *origin, json_t *e, uint64_t data_len, arb_st_tensor_t *t, char *why,
                                size_t len)
{
    const char *nm = t->name;
    if (!json_is_object(e))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': expected an object {dtype, shape, data_offsets}", origin,
                  nm);
    json_t *dt = json_object_get(e, "dtype"), *sh = json_object_get(e, "shape"),
           *off = json_object_get(e, "data_offsets");
    if (!json_is_string(dt))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': missing or non-string 'dtype'", origin, nm);
    if (arb_st_dtype_parse(json_string_value(dt), &t->dtype) != ARB_OK)
        ARB_RAISE(
            ARB_ERR_INVALID, why, len,
            "%s: tensor '%s': dtype '%s' is not supported (accepted: BF16, F16, F32, I64, I32, U8, I8, F8_E4M3, BOOL)",
            origin, nm, json_string_value(dt));
    if (!json_is_array(sh) || json_array_size(sh) > ARB_ST_MAX_DIMS)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': 'shape' must be an array of at most %u integers", origin,
                  nm, ARB_ST_MAX_DIMS);
    t->ndim = (unsigned)json_array_size(sh);
    uint64_t bytes = arb_st_dtype_size(t->dtype);
    for (unsigned d = 0; d < t->ndim; d++) {
        if (get_u64(json_array_get(sh, d), &t->shape[d]) != 0)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': shape[%u] must be a non-negative integer", origin,
                      nm, d);
        if (t->shape[d] && bytes > UINT64_MAX / t->shape[d])
            ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': shape overflows 64-bit byte counts", origin, nm);
        bytes *= t->shape[d];
    }
    if (!json_is_array(off) || json_array_size(off) != 2 || get_u64(json_array_get(off, 0), &t->begin) != 0 ||
        get_u64(json_array_get(off, 1), &t->end) != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: tensor '%s': 'data_offsets' must be [begin, end], two non-negative integers", origin, nm);
    if (t->end < t->begin)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': data_offsets [%llu, %llu] end before begin", origin, nm,
                  (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end - t->begin != bytes)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: tensor '%s': shape x %s = %llu bytes but data_offsets [%llu, %llu] hold %llu", origin, nm,
                  arb_st_dtype_name(t->dtype), (unsigned long long)bytes, (unsigned long long)t->begin,
                  (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
    if (t->end > data_len)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: tensor '%s': data_offsets end %llu is past the %llu data bytes of the file (truncated?)", origin,
                  nm, (unsigned long long)t->end, (unsigned long long)data_len);
    return ARB_OK;
}

static arb_status_t check_overlap(const char *origin, arb_st_file_t *f, char *why, size_t len)
{
    if (f->n < 2)
        return ARB_OK;
    arb_st_tensor_t **order = malloc(f->n * sizeof *order);
    if (!order)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory for %zu tensors", origin, f->n);
    for (size_t i = 0; i < f->n; i++)
        order[i] = &f->tensors[i];
    qsort(order, f->n, sizeof *order, by_begin);
    arb_status_t st = ARB_OK;
    const arb_st_tensor_t *reach = NULL; /* the non-empty tensor seen so far that ends last */
    for (size_t i = 0; i < f->n; i++) {
        const arb_st_tensor_t *b = order[i];
        if (b->end == b->begin) /* an empty tensor owns no bytes */
            continue;
        if (reach && reach->end > b->begin) {
            ARB_WHY(why, len, "%s: tensor '%s' (bytes %llu..%llu) overlaps tensor '%s' (bytes %llu..%llu)", origin,
                    b->name, (unsigned long long)b->begin, (unsigned long long)b->end, reach->name,
                    (unsigned long long)reach->begin, (unsigned long long)reach->end);
            st = ARB_ERR_INVALID;
            break;
        }
        if (!reach || b->end > reach->end)
            reach = b;
    }
    free(order);
    return st;
}

static arb_status_t parse_header(const char *origin, json_t *root, arb_st_file_t *f, char *why, size_t len)
{
    uint64_t data_len = f->size - f->data_start;
    size_t cap = json_object_size(root);
    f->tensors = calloc(cap ? cap : 1, sizeof *f->tensors);
    if (!f->tensors)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory for %zu tensors", origin, cap);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(val))
                ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: '__metadata__' must be an object of strings", origin);
            const char *mk;
            json_t *mv;
            json_object_foreach(val, mk, mv) if (!json_is_string(mv))
                ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: __metadata__ '%s' must be a string", origin, mk);
            continue;
        }
        arb_st_tensor_t *t = &f->tensors[f->n];
        t->name = strdup(key);
        if (!t->name)
            ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory", origin);
        f->n++;
        ARB_TRY(parse_entry(origin, val, data_len, t, why, len));
    }
    qsort(f->tensors, f->n, sizeof *f->tensors, by_name);
    return check_overlap(origin, f, why, len);
}

arb_status_t arb_st_parse(const uint8_t *buf, uint64_t size, const char *origin, arb_st_file_t *f, char *why,
                          size_t len)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", origin);
    f->base = buf;
    f->size = size;
    if (size < 8)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: %llu bytes: too short for the 8-byte header length (truncated header)", origin,
                  (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | buf[i];
    if (n > ARB_ST_MAX_HEADER)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: header length %llu bytes exceeds the %u-byte limit (not a safetensors file, or corrupt)", origin,
                  (unsigned long long)n, ARB_ST_MAX_HEADER);
    if (n > size - 8)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: header length %llu runs past the end of the file (%llu bytes after the length: truncated)",
                  origin, (unsigned long long)n, (unsigned long long)(size - 8));
    if (n < 2 || buf[8] != '{')
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: the header does not start with '{' (expected a JSON object)", origin);
    f->data_start = 8 + n;
    json_error_t jerr;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: header JSON: %s at byte %d (expected one JSON object)", origin,
                  jerr.text, jerr.position);
    arb_status_t st = ARB_OK;
    if (!json_is_object(root))
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err_free_json, why, len, "%s: the header is not a JSON object", origin);
    st = parse_header(origin, root, f, why, len);
err_free_json:
    json_decref(root);
    if (st != ARB_OK)
        arb_st_close(f);
    return st;
}

arb_status_t arb_st_open(const char *path, arb_st_file_t *f, char *why, size_t len)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: not a regular file", path);
    }
    uint64_t size = (uint64_t)sb.st_size;
    void *map = NULL;
    if (size > 0) {
        map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: mmap of %llu bytes: %s", path, (unsigned long long)size,
                      strerror(e));
        }
    }
    close(fd); /* the mapping stays valid */
    static const uint8_t empty[1];
    arb_status_t st = arb_st_parse(map ? map : empty, size, path, f, why, len);
    if (st != ARB_OK) {
        if (map)
            munmap(map, (size_t)size);
        return st;
    }
    f->mapped = map != NULL;
    return ARB_OK;
}

void arb_st_close(arb_st_file_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->mapped)
        munmap((void *)f->base, (size_t)f->size);
    f->tensors = NULL;
    f->n = 0;
    f->mapped = 0;
    f->base = NULL;
}

const arb_st_tensor_t *arb_st_find(const arb_st_file_t *f, const char *name)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[mid].name, name);
        if (c == 0)
            return &f->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
