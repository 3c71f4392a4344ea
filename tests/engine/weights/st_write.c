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
    return arb_st_write(path, t, n, NULL, 0) == ARB_OK ? 0 : -1;
}

int st_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    return fclose(f) != 0 || bad ? -1 : 0;
}
