/* SPDX-License-Identifier: MIT */
#include "base/sizes.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

arb_status_t arb_parse_size(const char *s, size_t *bytes)
{
    if (!s || !isdigit((unsigned char)*s))
        return ARB_ERR_INVALID;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return ARB_ERR_INVALID;
    unsigned long long mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1ull << 10; end++; break;
    case 'M': mult = 1ull << 20; end++; break;
    case 'G': mult = 1ull << 30; end++; break;
    default: break;
    }
    if (mult > 1 && *end == 'i')
        end++;
    if (toupper((unsigned char)*end) == 'B')
        end++;
    if (*end != '\0')
        return ARB_ERR_INVALID;
    if (v > SIZE_MAX / mult)
        return ARB_ERR_INVALID;
    *bytes = (size_t)(v * mult);
    return ARB_OK;
}

static arb_status_t push_unique(size_t *out, size_t cap, size_t *n, size_t v)
{
    for (size_t i = 0; i < *n; i++)
        if (out[i] == v)
            return ARB_OK;
    if (*n >= cap)
        return ARB_ERR_INVALID;
    out[(*n)++] = v;
    return ARB_OK;
}

/* Expands "a:b[:step]" where step is "+S" / "S" (additive) or "xF" (factor). */
static arb_status_t expand_range(char *item, int want_size, size_t *out, size_t cap, size_t *n,
                        char *err, size_t err_len)
{
    char *first = item, *last = strchr(item, ':'), *step = NULL;
    *last++ = '\0';
    step = strchr(last, ':');
    if (step)
        *step++ = '\0';
    size_t a, b, s = 1;
    int factor = 0;
    arb_status_t (*parse)(const char *, size_t *) = arb_parse_size;
    if (!want_size)
        parse = arb_parse_size; /* plain integers parse the same way without suffixes */
    if (parse(first, &a) || parse(last, &b)) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "range '%s:%s': expected START:END[:+STEP|:xFACTOR] with sizes like 4K or 43008", first, last);
    }
    if (step) {
        if (*step == 'x' || *step == '*') {
            factor = 1;
            step++;
        } else if (*step == '+') {
            step++;
        }
        if (parse(step, &s) || s == 0 || (factor && s < 2)) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "range step '%s': expected +STEP (>0) or xFACTOR (>=2)", step);
        }
    }
    if (a == 0 || b < a) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "range '%s:%s': START must be > 0 and not above END", first, last);
    }
    for (size_t v = a; v <= b;) {
        if (push_unique(out, cap, n, v)) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "range '%s:%s' expands to more than %zu values", first, last, cap);
        }
        size_t next = factor ? v * s : v + s;
        if (next <= v)
            break;
        v = next;
    }
    return ARB_OK;
}

static arb_status_t parse_list(const char *list, int want_size, size_t *out, size_t cap, size_t *n,
                      char *err, size_t err_len)
{
    *n = 0;
    if (!list || !*list) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "empty list");
    }
    char *copy = strdup(list);
    if (!copy) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "out of memory");
    }
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item))
            item++;
        if (strchr(item, ':')) {
            if ((rc = expand_range(item, want_size, out, cap, n, err, err_len)))
                break;
            continue;
        }
        size_t v;
        if (arb_parse_size(item, &v) || v == 0) {
            snprintf(err, err_len, "'%s': expected a positive %s", item,
                     want_size ? "size such as 43008, 42K, 1M or a range 4K:1M:x2" : "integer or a range 1:64");
            rc = -1;
            break;
        }
        if (!want_size && strpbrk(item, "KkMmGgBb")) {
            snprintf(err, err_len, "'%s': expected a plain integer", item);
            rc = -1;
            break;
        }
        if (push_unique(out, cap, n, v)) {
            snprintf(err, err_len, "more than %zu values", cap);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && *n == 0) {
        snprintf(err, err_len, "'%s': no values", list);
        rc = -1;
    }
    free(copy);
    return rc;
}

arb_status_t arb_parse_size_list(const char *list, size_t *out, size_t cap, size_t *n, char *err, size_t err_len)
{
    return parse_list(list, 1, out, cap, n, err, err_len);
}

arb_status_t arb_parse_uint_list(const char *list, unsigned *out, size_t cap, size_t *n, char *err, size_t err_len)
{
    size_t *tmp = calloc(cap ? cap : 1, sizeof *tmp);
    if (!tmp) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "out of memory");
    }
    int rc = parse_list(list, 0, tmp, cap, n, err, err_len);
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        if (tmp[i] > 0xffffffffu) {
            snprintf(err, err_len, "'%zu' is too large", tmp[i]);
            rc = -1;
        }
        out[i] = (unsigned)tmp[i];
    }
    free(tmp);
    return rc;
}

void arb_format_size(size_t bytes, char *buf, size_t len)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(buf, len, "%zuM", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, len, "%zuK", bytes >> 10);
    else
        snprintf(buf, len, "%zu", bytes);
}
