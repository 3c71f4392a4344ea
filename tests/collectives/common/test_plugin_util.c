/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the plugins' helper library (collectives/common/arb_plugin_util.h):
 * the key=value parser (deprecated spellings, duplicates, malformed items, the
 * callback's errors), the integer values, the resident-grid resolver over a fake
 * two-rank allgather, and the device check's host-only and bad-device paths. No MPI
 * launcher; the device check's "no CUDA device visible" path runs where there is none.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "arb_plugin_util.h"
#include "arbench/status.h"
#include "tap.h"

enum { K_BLOCKS, K_ROW_BLOCKS, K_PDL, NKEYS };
static const arb_kv_key_t keys[NKEYS] = {{"blocks", "ctas"}, {"row_blocks", "row_ctas"}, {"pdl", NULL}};

typedef struct seen {
    int n, key[8];
    char value[8][32];
} seen_t;

static arb_status_t record(void *ctx, int key, const char *value, char *why, size_t why_len)
{
    seen_t *s = ctx;
    if (strcmp(value, "bad") == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "test: value 'bad' for key %d", key);
    s->key[s->n] = key;
    snprintf(s->value[s->n], sizeof s->value[0], "%s", value);
    s->n++;
    return ARB_OK;
}

/* Host ops of a fake job: logs into a buffer; allgather copies this rank's block and
 * a second rank's block from `other`. */
static char logged[512];
static int other[ARB_GRID_SIZES];
static void fake_log(void *ctx, const char *msg)
{
    (void)ctx;
    snprintf(logged, sizeof logged, "%s", msg);
}
static int fake_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    (void)ctx;
    memcpy(recv, send, bytes);
    memcpy((char *)recv + bytes, other, bytes);
    return 0;
}
static const arb_host_ops_t ops = {.ctx = NULL, .allgather = fake_allgather, .log = fake_log};

static arb_status_t parse(const char *params, seen_t *s, char *why, size_t len)
{
    memset(s, 0, sizeof *s);
    why[0] = '\0';
    logged[0] = '\0';
    return arb_kv_parse("test", params, keys, NKEYS, record, s, &ops, why, len);
}

static void parse_in_order(void)
{
    seen_t s;
    char why[256];
    TAP_CHECK(parse("pdl=1,blocks=24,row_blocks=auto", &s, why, sizeof why) == ARB_OK);
    TAP_CHECK(s.n == 3 && s.key[0] == K_PDL && s.key[1] == K_BLOCKS && s.key[2] == K_ROW_BLOCKS);
    TAP_CHECK(!strcmp(s.value[1], "24") && !strcmp(s.value[2], "auto"));
    TAP_CHECK(logged[0] == '\0');
    TAP_CHECK(parse("", &s, why, sizeof why) == ARB_OK && s.n == 0);
    TAP_CHECK(arb_kv_parse("test", NULL, keys, NKEYS, record, &s, &ops, why, sizeof why) == ARB_OK);
}

static void deprecated_spelling(void)
{
    seen_t s;
    char why[256];
    TAP_CHECK(parse("ctas=12,row_ctas=2", &s, why, sizeof why) == ARB_OK);
    TAP_CHECK(s.n == 2 && s.key[0] == K_BLOCKS && s.key[1] == K_ROW_BLOCKS && !strcmp(s.value[0], "12"));
    printf("# logged: %s\n", logged);
    TAP_CHECK(strstr(logged, "row_ctas is deprecated") && strstr(logged, "row_blocks=2"));
    /* Without ops nothing is logged, and the value still arrives. */
    memset(&s, 0, sizeof s);
    TAP_CHECK(arb_kv_parse("test", "ctas=3", keys, NKEYS, record, &s, NULL, why, sizeof why) == ARB_OK);
    TAP_CHECK(s.n == 1 && s.key[0] == K_BLOCKS);
}

static void rejected(void)
{
    static const struct {
        const char *params, *mentions;
    } bad[] = {
        {"blocks=8,ctas=4", "parameter blocks given twice"},
        {"blocks=8,blocks=4", "parameter blocks given twice"},
        {"blocks=8,", "empty item"},
        {"blocks=8,,pdl=1", "empty item"},
        {"blocks", "'blocks' is not key=value"},
        {"=8", "'=8' is not key=value"},
        {"pdl=", "'pdl=' is not key=value: pdl '' has no value"},
        {"colour=red", "unknown parameter 'colour' in 'colour=red' (keys: blocks, row_blocks, pdl)"},
        {"BLOCKS=8", "unknown parameter 'BLOCKS'"},
        {"blocks=bad", "test: value 'bad' for key 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        seen_t s;
        char why[256];
        const arb_status_t st = parse(bad[i].params, &s, why, sizeof why);
        printf("# '%s' -> %d: %s\n", bad[i].params, (int)st, why);
        TAP_CHECK(st == ARB_ERR_INVALID && strstr(why, bad[i].mentions) && !strchr(why, '\n'));
        TAP_CHECK(!strncmp(why, "test: ", 6));
    }
    char longer[ARB_KV_MAX_CHARS + 8], why[256];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    seen_t s;
    TAP_CHECK(parse(longer, &s, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "longer than 511 characters"));
    /* A plugin without keys says so. */
    TAP_CHECK(arb_kv_parse("none", "algo=Ring", NULL, 0, NULL, NULL, NULL, why, sizeof why) == ARB_ERR_INVALID);
    printf("# %s\n", why);
    TAP_CHECK(strstr(why, "unknown parameter 'algo' in 'algo=Ring' (it takes no parameters)") != NULL);
}

static void integers(void)
{
    int v = -7;
    TAP_CHECK(arb_kv_int("24", 1, 64, &v) == 0 && v == 24);
    TAP_CHECK(arb_kv_int("64", 1, 64, &v) == 0 && v == 64);
    TAP_CHECK(arb_kv_int("0", 1, 64, &v) == -1 && v == 64);
    TAP_CHECK(arb_kv_int("65", 1, 64, &v) == -1);
    TAP_CHECK(arb_kv_int("-1", 0, 64, &v) == -1);
    TAP_CHECK(arb_kv_int("+3", 0, 64, &v) == -1);
    TAP_CHECK(arb_kv_int("8x", 0, 64, &v) == -1);
    TAP_CHECK(arb_kv_int("", 0, 64, &v) == -1);
    TAP_CHECK(arb_kv_int("99999999999999999999", 0, 64, &v) == -1);
    TAP_CHECK(arb_kv_int("-5", -10, 10, &v) == 0 && v == -5);
}

static void grid(void)
{
    const int mine[ARB_GRID_SIZES] = {132, 60, 30, 14};
    const int theirs[ARB_GRID_SIZES] = {120, 66, 2, 16};
    int fewest[ARB_GRID_SIZES], g = -1;
    char why[256];
    memcpy(other, theirs, sizeof other);
    TAP_CHECK(arb_grid_agree(&ops, 2, mine, fewest, "test", why, sizeof why) == ARB_OK);
    TAP_CHECK(fewest[0] == 120 && fewest[1] == 60 && fewest[2] == 2 && fewest[3] == 14);
    /* 24 CTAs: clusters of 8 (3 resident needed, 14 there) win the tie over 1 and 2;
     * clusters of 4 would need 6 and only 2 are resident. */
    TAP_CHECK(arb_grid_largest(fewest, 24, &g) == 3 && g == 24);
    TAP_CHECK(arb_grid_fit_mask(fewest, 24, 8) == 0xbu);
    TAP_CHECK(arb_grid_fit_mask(fewest, 24, 2) == 0x3u);
    /* 7 CTAs: only single CTAs make 7; 6 in pairs is fewer. */
    TAP_CHECK(arb_grid_largest(fewest, 7, &g) == 0 && g == 7);
    const int none[ARB_GRID_SIZES] = {0, 0, 0, 0};
    TAP_CHECK(arb_grid_largest(none, 24, &g) == -1 && g == 0);
    TAP_CHECK(arb_grid_fit_mask(none, 24, 8) == 0);
    TAP_CHECK(arb_grid_agree(&ops, 65, mine, fewest, "test", why, sizeof why) == ARB_ERR_INVALID);
}

static void device_check(void)
{
    char why[256] = "";
    arb_comm_info_t info = {.rank = 0, .nranks = 1, .local_nranks = 1, .nnodes = 1, .cuda_device = -1};
    TAP_CHECK(arb_plugin_device_check(&info, "test", why, sizeof why) == ARB_DECLINE);
    TAP_CHECK(strstr(why, "test needs a CUDA device (this run is host-only)") != NULL);
    int ndev = 0;
    const int have_gpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    info.cuda_device = have_gpu ? ndev : 0;
    const arb_status_t st = arb_plugin_device_check(&info, "test", why, sizeof why);
    printf("# %s: %s\n", have_gpu ? "GPU visible" : "no GPU", why);
    if (have_gpu) {
        TAP_CHECK(st == ARB_ERR_INVALID && strstr(why, "is not one of the"));
        info.cuda_device = 0;
        TAP_CHECK(arb_plugin_device_check(&info, "test", why, sizeof why) == ARB_OK);
    } else {
        TAP_CHECK(st == ARB_ERR_SYSTEM && strstr(why, "no CUDA device visible"));
    }
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"parse_in_order", parse_in_order}, {"deprecated_spelling", deprecated_spelling},
        {"rejected", rejected},             {"integers", integers},
        {"grid", grid},                     {"device_check", device_check},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
