/* SPDX-License-Identifier: MIT */
/* For the tests: writes safetensors files (tests/engine/weights/st_write.h). */
#include "st_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_write_raw(const char *path, const char *header, const void *data, size_t data_len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint64_t n = strlen(header);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)(n >> (8 * i));
    int bad = fwrite(len8, 1, 8, f) != 8 || fwrite(header, 1, n, f) != n ||
              (data_len && fwrite(data, 1, data_len, f) != data_len);
    return fclose(f) != 0 || bad ? -1 : 0;
}

int st_write(const char *path, const st_w_tensor_t *t, size_t n)
{
    size_t cap = 256 + n * 256, used = 0, data_len = 0;
    char *h = malloc(cap);
    if (!h)
        return -1;
    used += (size_t)snprintf(h + used, cap - used, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < n; i++) {
        used += (size_t)snprintf(h + used, cap - used, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name, t[i].dtype);
        for (unsigned d = 0; d < t[i].ndim; d++)
            used += (size_t)snprintf(h + used, cap - used, d ? ",%llu" : "%llu", (unsigned long long)t[i].shape[d]);
        used +=
            (size_t)snprintf(h + used, cap - used, "],\"data_offsets\":[%zu,%zu]}", data_len, data_len + t[i].bytes);
        data_len += t[i].bytes;
    }
    snprintf(h + used, cap - used, "}");
    uint8_t *data = malloc(data_len ? data_len : 1);
    if (!data) {
        free(h);
        return -1;
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(data + off, t[i].data, t[i].bytes);
        off += t[i].bytes;
    }
    int rc = st_write_raw(path, h, data, data_len);
    free(data);
    free(h);
    return rc;
}

int st_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    return fclose(f) != 0 || bad ? -1 : 0;
}
