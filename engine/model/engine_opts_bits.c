/* SPDX-License-Identifier: MIT */
/* `arbench engine`'s options that take none or a comma list of names, each name a bit
 * (engine/model/engine_opts.h's arb_engine_bits_t): their names, parser and namer. */
#include <stdio.h>
#include <string.h>

#include "model/engine_opts.h"

static const char *const ahead_names[] = {"o_proj", "router"};
static const char *const wave_names[] = {"qkv_a", "o_proj"};
static const char *const fuse_names[] = {"qb_absorb", "merge_uv", "prep_qb"};
static const char *const side_names[] = {"o_proj", "router", "shared", "qkv_a", "cache"};
_Static_assert(ARB_L2_AHEAD_O_PROJ == 1 << 0 && ARB_L2_AHEAD_ROUTER == 1 << 1, "ahead_names: one name a bit, in order");
_Static_assert(ARB_WAVE_FIT_QKV_A == 1 << 0 && ARB_WAVE_FIT_O_PROJ == 1 << 1, "wave_names: one name a bit, in order");
_Static_assert(ARB_FUSE_QB_ABSORB == 1 << 0 && ARB_FUSE_MERGE_UV == 1 << 1 && ARB_FUSE_PREP_QB == 1 << 2,
               "fuse_names: one name a bit, in order");
_Static_assert(ARB_L2_SIDE_O_PROJ == 1 << 0 && ARB_L2_SIDE_ROUTER == 1 << 1 && ARB_L2_SIDE_SHARED == 1 << 2 &&
                   ARB_L2_SIDE_QKV_A == 1 << 3 && ARB_L2_SIDE_CACHE == 1 << 4,
               "side_names: one name a bit, in order");
_Static_assert(ARB_L2_SIDE_ALL == (1 << sizeof side_names / sizeof side_names[0]) - 1,
               "ARB_L2_SIDE_ALL: every name's bit");

#define NAMES(a) a, sizeof a / sizeof a[0]
static const struct {
    const char *opt;
    const char *const *names; /* names[i] is bit 1 << i */
    unsigned n;
} sets[] = {
    [ARB_BITS_L2_AHEAD] = {"--l2-ahead", NAMES(ahead_names)},
    [ARB_BITS_WAVE_FIT] = {"--wave-fit", NAMES(wave_names)},
    [ARB_BITS_FUSE] = {"--fuse", NAMES(fuse_names)},
    [ARB_BITS_L2_SIDE] = {"--l2-side", NAMES(side_names)},
};
#undef NAMES

int arb_engine_opts_bits_parse(arb_engine_bits_t which, const char *v, unsigned *bits, char *err, size_t len)
{
    const char *opt = sets[which].opt, *const *names = sets[which].names;
    const unsigned n = sets[which].n;
    char expect[160] = "expected none, or a comma list of ", buf[256];
    for (unsigned i = 0; i < n; i++)
        snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%s%s",
                 i == 0       ? ""
                 : i + 1 == n ? " and "
                              : ", ",
                 names[i]);
    *bits = 0;
    if (strcmp(v, "none") == 0)
        return 0;
    if (!*v || strlen(v) >= sizeof buf) {
        snprintf(err, len, "%s '%s': %s", opt, v, expect);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned b = 0;
        for (unsigned i = 0; i < n && !b; i++)
            b = strcmp(tok, names[i]) == 0 ? 1u << i : 0;
        if (!b || (*bits & b)) {
            snprintf(err, len, "%s '%s': %s '%s' (%s)", opt, v, b ? "repeated" : "unknown", tok, expect);
            return -1;
        }
        *bits |= b;
    }
    if (!*bits || v[strlen(v) - 1] == ',' || v[0] == ',' || strstr(v, ",,")) {
        snprintf(err, len, "%s '%s': %s", opt, v, expect);
        return -1;
    }
    return 0;
}

const char *arb_engine_opts_bits_str(arb_engine_bits_t which, unsigned bits, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < sets[which].n && at < n; i++)
        if (bits & (1u << i))
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "+" : "", sets[which].names[i]);
    return bits ? buf : "none";
}
