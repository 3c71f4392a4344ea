/* SPDX-License-Identifier: MIT */
/* engine/weights/safetensors.c: a well-formed file read back byte for byte, and every
 * malformed header refused with a message naming the file and the tensor. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "st_write.h"
#include "tap.h"
#include "weights/safetensors.h"

static char why[2048];
static uint8_t buf[8192];

/* 8-byte length + header + data_len bytes (value i & 0xff) in buf; returns the size. */
static uint64_t mk(const char *header, size_t data_len)
{
    uint64_t n = strlen(header);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(n >> (8 * i));
    memcpy(buf + 8, header, n);
    for (size_t i = 0; i < data_len; i++)
        buf[8 + n + i] = (uint8_t)i;
    return 8 + n + data_len;
}

/* Parses header + data_len bytes; expects a refusal mentioning each of the given strings. */
static void refused(const char *header, size_t data_len, const char *s1, const char *s2)
{
    arb_st_file_t f;
    uint64_t size = mk(header, data_len);
    arb_status_t st = arb_st_parse(buf, size, "bad.safetensors", &f, why, sizeof why);
    TAP_EQ_INT(st, ARB_ERR_INVALID);
    if (st == ARB_OK)
        arb_st_close(&f);
    TAP_HAS_STR(why, "bad.safetensors");
    if (s1)
        TAP_HAS_STR(why, s1);
    if (s2)
        TAP_HAS_STR(why, s2);
}

static void t_good(void)
{
    char path[] = "/tmp/arb-st-XXXXXX";
    int fd = mkstemp(path);
    TAP_REQUIRE(fd >= 0);
    close(fd);
    uint16_t a[6] = {1, 2, 3, 4, 5, 6};
    float b[3] = {0.5f, -1.0f, 2.0f};
    int32_t c[2] = {7, -7};
    st_w_tensor_t t[] = {{"z.a", "BF16", 2, {2, 3}, a, sizeof a},
                         {"b", "F32", 1, {3}, b, sizeof b},
                         {"scalar", "I32", 0, {0}, c, 4},
                         {"empty", "U8", 2, {0, 5}, c, 0},
                         {"c", "I32", 1, {1}, c + 1, 4}};
    TAP_REQUIRE(st_write(path, t, 5) == 0);
    arb_st_file_t f;
    arb_status_t st = arb_st_open(path, &f, why, sizeof why);
    unlink(path);
    if (st != ARB_OK)
        tap_diag("%s", why);
    TAP_REQUIRE(st == ARB_OK);
    TAP_EQ_INT(f.n, 5);
    const arb_st_tensor_t *ta = arb_st_find(&f, "z.a"), *tb = arb_st_find(&f, "b"), *ts = arb_st_find(&f, "scalar"),
                          *tc = arb_st_find(&f, "c");
    TAP_REQUIRE(ta && tb && ts && tc && arb_st_find(&f, "empty"));
    TAP_CHECK(arb_st_find(&f, "zz") == NULL);
    TAP_EQ_INT(ta->dtype, ARB_ST_BF16);
    TAP_EQ_INT(ta->ndim, 2);
    TAP_EQ_U64(ta->shape[1], 3);
    TAP_EQ_U64(arb_st_numel(ta), 6);
    TAP_EQ_U64(arb_st_numel(ts), 1);
    TAP_CHECK(memcmp(arb_st_data(&f, ta), a, sizeof a) == 0);
    TAP_CHECK(memcmp(arb_st_data(&f, tb), b, sizeof b) == 0);
    TAP_CHECK(memcmp(arb_st_data(&f, ts), c, 4) == 0);
    TAP_CHECK(memcmp(arb_st_data(&f, tc), c + 1, 4) == 0);
    arb_st_close(&f);
    TAP_EQ_INT(f.n, 0);
}

static void t_dtypes(void)
{
    static const char *names[] = {"BF16", "F16", "F32", "I64", "I32", "U8", "I8", "F8_E4M3"};
    static const size_t sizes[] = {2, 2, 4, 8, 4, 1, 1, 1};
    for (size_t i = 0; i < 8; i++) {
        arb_st_dtype_t dt;
        TAP_EQ_INT(arb_st_dtype_parse(names[i], &dt), ARB_OK);
        TAP_EQ_INT(arb_st_dtype_size(dt), sizes[i]);
        TAP_EQ_STR(arb_st_dtype_name(dt), names[i]);
    }
    arb_st_dtype_t dt;
    TAP_EQ_INT(arb_st_dtype_parse("F64", &dt), ARB_ERR_INVALID);
    TAP_EQ_INT(arb_st_dtype_parse("bf16", &dt), ARB_ERR_INVALID);
}

static void t_truncated_header(void)
{
    arb_st_file_t f;
    mk("{}", 0);
    for (uint64_t size = 0; size < 8; size++) {
        TAP_EQ_INT(arb_st_parse(buf, size, "bad.safetensors", &f, why, sizeof why), ARB_ERR_INVALID);
        TAP_HAS_STR(why, "truncated header");
    }
    /* the header cut short inside its JSON */
    uint64_t size = mk("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2);
    TAP_EQ_INT(arb_st_parse(buf, 30, "bad.safetensors", &f, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "runs past the end");
    TAP_EQ_INT(arb_st_parse(buf, size, "ok.safetensors", &f, why, sizeof why), ARB_OK);
    arb_st_close(&f);
}

static void t_header_past_eof(void)
{
    arb_st_file_t f;
    uint64_t size = mk("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2);
    buf[0] = (uint8_t)(size - 8 + 1); /* one byte more than the file holds */
    TAP_EQ_INT(arb_st_parse(buf, size, "bad.safetensors", &f, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "header length");
    TAP_HAS_STR(why, "runs past the end of the file");
}

static void t_terabytes(void)
{
    arb_st_file_t f;
    uint64_t size = mk("{}", 0);
    buf[5] = 1; /* 2^40 bytes of header */
    TAP_EQ_INT(arb_st_parse(buf, size, "bad.safetensors", &f, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "exceeds the 100000000-byte limit");
    memset(buf, 0xff, 8);
    TAP_EQ_INT(arb_st_parse(buf, size, "bad.safetensors", &f, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "exceeds");
    /* a tensor claiming 2 TiB of data in a small file */
    refused("{\"huge\":{\"dtype\":\"BF16\",\"shape\":[1048576,1048576],\"data_offsets\":[0,2199023255552]}}", 16,
            "'huge'", "past the 16 data bytes");
    /* a shape whose byte count overflows 64 bits */
    refused("{\"huge\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", 16, "'huge'",
            "overflows");
}

static void t_offsets(void)
{
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[4,12]}}", 8, "'w'", "past the 8 data bytes");
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[9,8]}}", 8, "'w'", "end before begin");
    refused("{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,6]}}", 8, "'w'",
            "shape x BF16 = 8 bytes but data_offsets [0, 6] hold 6");
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "'w'", "data_offsets");
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,-2]}}", 8, "'w'", "data_offsets");
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}", 8, "'w'", "shape[0]");
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 8, "'w'", "at most 8");
}

static void t_overlap(void)
{
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
            "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[3,7]}}",
            8, "'b'", "overlaps tensor 'a'");
    /* a long tensor covering a later one past a short one in between */
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
            "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
            "\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[5,7]}}",
            8, "overlaps tensor 'a'", NULL);
    /* touching is fine, and so is a gap */
    arb_st_file_t f;
    uint64_t size = mk("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[6,8]}}",
                       8);
    TAP_EQ_INT(arb_st_parse(buf, size, "ok.safetensors", &f, why, sizeof why), ARB_OK);
    TAP_EQ_INT(((const uint8_t *)arb_st_data(&f, arb_st_find(&f, "b")))[0], 6);
    arb_st_close(&f);
}

static void t_json_and_dtype(void)
{
    refused("{\"w\":{\"dtype\":\"Q4_K\",\"shape\":[2],\"data_offsets\":[0,2]}}", 8, "'w'", "dtype 'Q4_K'");
    refused("{\"w\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,2]}}", 8, "'w'", "dtype");
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}", 8, "header JSON", NULL);
    refused("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
            "\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
            8, "duplicate", NULL);
    refused("[1, 2]", 0, "start with '{'", NULL);
    refused("{\"w\":[1]}", 0, "'w'", "expected an object");
    refused("{\"__metadata__\":{\"format\":1}}", 0, "__metadata__", NULL);
    /* padded with spaces, as writers may */
    arb_st_file_t f;
    uint64_t size = mk("{\"__metadata__\":{\"format\":\"pt\"}}        ", 0);
    TAP_EQ_INT(arb_st_parse(buf, size, "ok.safetensors", &f, why, sizeof why), ARB_OK);
    TAP_EQ_INT(f.n, 0);
    arb_st_close(&f);
}

static void t_open_errors(void)
{
    arb_st_file_t f;
    TAP_EQ_INT(arb_st_open("/nonexistent/x.safetensors", &f, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "/nonexistent/x.safetensors: cannot open");
    TAP_EQ_INT(arb_st_open("/tmp", &f, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "not a regular file");
    char path[] = "/tmp/arb-st-XXXXXX";
    int fd = mkstemp(path);
    TAP_REQUIRE(fd >= 0);
    close(fd);
    TAP_EQ_INT(arb_st_open(path, &f, why, sizeof why), ARB_ERR_INVALID); /* empty file */
    TAP_HAS_STR(why, "truncated header");
    unlink(path);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"good_file", t_good},
        {"dtypes", t_dtypes},
        {"truncated_header", t_truncated_header},
        {"header_past_eof", t_header_past_eof},
        {"terabytes", t_terabytes},
        {"offsets", t_offsets},
        {"overlap", t_overlap},
        {"json_and_dtype", t_json_and_dtype},
        {"open_errors", t_open_errors},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
