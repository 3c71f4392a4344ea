/* SPDX-License-Identifier: MIT */
/* write_tiny DIR bf16|int4|int4-k25 [shape|dtype|missing|phantom|weight_shape]: writes the
 * tiny checkpoint (tiny_ckpt.h) into the existing folder DIR (int4-k25: in Kimi-K2.5's
 * layout, names under language_model. and the config under text_config), spoilt one way
 * if asked. */
#include <stdio.h>
#include <string.h>

#include "tiny_ckpt.h"

int main(int argc, char **argv)
{
    static const char *spoils[] = {"none", "shape", "dtype", "missing", "phantom", "weight_shape"};
    char why[2048];
    int k25 = argc >= 3 && strcmp(argv[2], "int4-k25") == 0;
    if (argc < 3 || argc > 4 || (strcmp(argv[2], "bf16") != 0 && strcmp(argv[2], "int4") != 0 && !k25)) {
        fprintf(stderr, "usage: write_tiny DIR bf16|int4|int4-k25 [shape|dtype|missing|phantom|weight_shape]\n");
        return 2;
    }
    tiny_spoil_t spoil = TINY_SPOIL_NONE;
    if (argc == 4) {
        size_t i = 1;
        while (i < sizeof spoils / sizeof spoils[0] && strcmp(spoils[i], argv[3]) != 0)
            i++;
        if (i == sizeof spoils / sizeof spoils[0]) {
            fprintf(stderr, "write_tiny: unknown spoil '%s'\n", argv[3]);
            return 2;
        }
        spoil = (tiny_spoil_t)i;
    }
    arb_model_config_t c;
    arb_weight_format_t wf = strcmp(argv[2], "bf16") != 0 ? ARB_WEIGHTS_INT4 : ARB_WEIGHTS_BF16;
    if (arb_config_load("tiny", &c, why, sizeof why) != ARB_OK ||
        tiny_write(argv[1], &c, wf, k25 ? "language_model." : "", spoil, why, sizeof why)) {
        fprintf(stderr, "write_tiny: %s\n", why);
        return 1;
    }
    return 0;
}
