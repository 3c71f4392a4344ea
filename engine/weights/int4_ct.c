/* SPDX-License-Identifier: MIT */
/* compressed-tensors INT4 into the engine's layout (engine/weights/int4_ct.h). */
#include "weights/int4_ct.h"

#include "arbench/status.h"
#include "model/shard.h"

void arb_int4_ct_convert(int32_t *words, size_t n_words)
{
    for (size_t i = 0; i < n_words; i++)
        words[i] = arb_int4_ct_to_engine(words[i]);
}

arb_status_t arb_int4_ct_scheme_check(const arb_int4_ct_scheme_t *s, const char *origin, char *why, size_t len)
{
    if (s->num_bits != 4)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: quantization num_bits %u is not supported (accepted: 4)", origin,
                  s->num_bits);
    if (!s->symmetric)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: asymmetric quantization (a zero point) is not supported (accepted: symmetric true)", origin);
    if (s->group_size != ARB_INT4_GROUP)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: quantization group_size %u is not supported (accepted: %u)", origin,
                  s->group_size, ARB_INT4_GROUP);
    return ARB_OK;
}
