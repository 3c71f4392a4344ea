/* SPDX-License-Identifier: MIT */
/*
 * One profile row's numbers checked against each other, for every profile reader (arbench
 * and the NCCL tuner plugin, which compiles this file in): a row whose figures disagree was
 * edited or damaged and is refused, naming the column.
 */
#ifndef ARB_PROFILE_ROW_H
#define ARB_PROFILE_ROW_H

#include <stddef.h>

/* The row's fields by name; NULL for a column the file does not have, "" for an empty
 * field. Checks: rep_bytes within [min_bytes, max_bytes]; points >= 1; median_us and
 * baseline_median_us positive; speedup = baseline_median_us / median_us within the
 * writer's rounding (medians %.3f, speedup %.4f), present exactly when a baseline is; a
 * role, where given, one of reference/baseline/candidate and never reference (floors are
 * never chosen). Returns NULL, or the column at fault with why written. */
typedef struct arb_profile_row {
    const char *min_bytes, *max_bytes, *rep_bytes, *points;
    const char *median_us, *baseline_median_us, *speedup, *role;
} arb_profile_row_t;

const char *arb_profile_row_check(const arb_profile_row_t *r, char *why, size_t why_len);

#endif
