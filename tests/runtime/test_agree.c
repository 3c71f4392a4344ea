/* SPDX-License-Identifier: MIT */
/* runtime/agree.h without MPI: what counts as the same arguments and the same file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/agree.h"
#include "tap.h"

static uint64_t digest(const char *line, const char *const *file_opts)
{
    char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "engine %s", line);
    for (char *t = strtok(buf, " "); t && argc < 32; t = strtok(NULL, " "))
        argv[argc++] = t;
    arb_agree_t *a = malloc(sizeof *a);
    arb_agree_init(a);
    arb_agree_args(a, argc, argv, file_opts);
    uint64_t d = arb_agree_digest(a);
    free(a);
    return d;
}

static void t_normalised(void)
{
    TAP_EQ_U64(digest("--steps 2 --seed=5", NULL), digest("--seed 5 --steps=2", NULL));
    TAP_CHECK(digest("--steps 2", NULL) != digest("--steps 3", NULL));
    TAP_CHECK(digest("--dry-run", NULL) != digest("", NULL));
    TAP_CHECK(digest("--steps 2 --steps 3", NULL) != digest("--steps 3 --steps 2", NULL));
    TAP_CHECK(digest("--steps 2 --steps 3", NULL) != digest("--steps 3", NULL));
    TAP_CHECK(digest("--quiet --dry-run", NULL) != digest("--quiet=--dry-run", NULL));
}

static void t_file_options_by_content(void)
{
    static const char *const files[] = {"--config", NULL};
    TAP_EQ_U64(digest("--config a.json --steps 2", files), digest("--steps 2 --config=b.json", files));
    TAP_CHECK(digest("--config a.json", NULL) != digest("--config b.json", NULL));
}

static uint64_t file_digest(const char *path)
{
    arb_agree_t *a = malloc(sizeof *a);
    arb_agree_init(a);
    arb_agree_file(a, "--config", path);
    uint64_t d = arb_agree_digest(a);
    TAP_HAS_STR(a->item[0].shown, "bytes");
    free(a);
    return d;
}

static void t_files(void)
{
    char p0[] = "/tmp/arb-agree-XXXXXX", p1[] = "/tmp/arb-agree-XXXXXX";
    int f0 = mkstemp(p0), f1 = mkstemp(p1);
    TAP_REQUIRE(f0 >= 0 && f1 >= 0);
    TAP_CHECK(write(f0, "{\"a\": 1}\n", 9) == 9 && write(f1, "{\"a\": 1}\n", 9) == 9);
    TAP_EQ_U64(file_digest(p0), file_digest(p1));
    TAP_CHECK(write(f1, " ", 1) == 1);
    TAP_CHECK(file_digest(p0) != file_digest(p1));
    close(f0), close(f1), unlink(p0), unlink(p1);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"normalised", t_normalised}, {"file_options_by_content", t_file_options_by_content}, {"files", t_files}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
