/* SPDX-License-Identifier: MIT */
/* Writing safetensors files (engine/weights/st_writer.h). */
#include "weights/st_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "base/outfile.h"

arb_status_t arb_st_write(const char *path, const arb_st_out_tensor_t *t, size_t n, char *why, size_t len)
{
    size_t cap = 256 + n * 320, used = 0;
    uint64_t off = 0;
    char *h = malloc(cap);
    if (!h)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of host memory for the header", path);
    used += (size_t)snprintf(h + used, cap - used, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < n && used < cap; i++) {
        used += (size_t)snprintf(h + used, cap - used, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name, t[i].dtype);
        for (unsigned d = 0; d < t[i].ndim && used < cap; d++)
            used += (size_t)snprintf(h + used, cap - used, d ? ",%llu" : "%llu", (unsigned long long)t[i].shape[d]);
        if (used < cap)
            used += (size_t)snprintf(h + used, cap - used, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                     (unsigned long long)(off + t[i].bytes));
        off += t[i].bytes;
    }
    if (used + 9 >= cap) {
        free(h);
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: header longer than planned (a tensor name too long?)", path);
    }
    h[used++] = '}';
    while (used % 8)
        h[used++] = ' ';
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)used >> (8 * i));
    arb_outfile_t of;
    char err[512];
    FILE *f = arb_outfile_open(&of, "safetensors", path, err, sizeof err);
    if (!f) {
        free(h);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s", err);
    }
    int bad = fwrite(len8, 1, 8, f) != 8 || fwrite(h, 1, used, f) != used;
    for (size_t i = 0; i < n && !bad; i++)
        bad = t[i].bytes && fwrite(t[i].data, 1, t[i].bytes, f) != t[i].bytes;
    free(h);
    if (bad) {
        arb_outfile_discard(&of);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: write failed", path);
    }
    if (arb_outfile_commit(&of, err, sizeof err) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s", err);
    return ARB_OK;
}
