/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the safetensors header validation (arb_st_parse) over the input as a
 * whole file, every accepted tensor's first and last byte touched (AddressSanitizer
 * catches a tensor placed outside the buffer) and looked up by name; with the first byte
 * odd, the rest as a config.json for the quantization_config reader instead. Built and
 * run by fuzz.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights/quant.h"
#include "weights/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[1024];
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        char *text = malloc(size);
        if (!text)
            return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        arb_weight_format_t wf;
        (void)arb_weights_format_parse(text, "fuzz/config.json", &wf, why, sizeof why);
        free(text);
        return 0;
    }
    /* a copy of exactly the file's bytes, so a read past them is an ASan report */
    uint8_t *file = malloc(size - 1 ? size - 1 : 1);
    if (!file)
        return 0;
    memcpy(file, data + 1, size - 1);
    arb_st_file_t f;
    if (arb_st_parse(file, size - 1, "fuzz.safetensors", &f, why, sizeof why) == ARB_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < f.n; i++) {
            const arb_st_tensor_t *t = &f.tensors[i];
            if (t->end > t->begin) {
                const uint8_t *p = (const uint8_t *)arb_st_data(&f, t);
                sink ^= p[0] ^ p[t->end - t->begin - 1];
            }
            if (arb_st_find(&f, t->name) != t)
                abort();
        }
        (void)sink;
        arb_st_close(&f);
    }
    free(file);
    return 0;
}
