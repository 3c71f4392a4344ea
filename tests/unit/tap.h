/* SPDX-License-Identifier: MIT */
/* Minimal TAP producer: a table of named tests, each runnable alone by name. */
#ifndef ARB_TAP_H
#define ARB_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_failed_checks;

#define TAP_CHECK(cond)                                                                 \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            printf("# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);            \
            tap_failed_checks++;                                                        \
        }                                                                               \
    } while (0)

typedef struct tap_test {
    const char *name;
    void (*fn)(void);
} tap_test_t;

/* Runs every test, or only argv[1] when given. Exit 0 when all passed. */
static int tap_main(const tap_test_t *tests, size_t n, int argc, char **argv)
{
    size_t planned = 0;
    for (size_t i = 0; i < n; i++)
        planned += argc < 2 || !strcmp(argv[1], tests[i].name);
    printf("1..%zu\n", planned);
    int bad = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc >= 2 && strcmp(argv[1], tests[i].name))
            continue;
        int before = tap_failed_checks;
        tests[i].fn();
        int ok = tap_failed_checks == before;
        printf("%s %zu - %s\n", ok ? "ok" : "not ok", ++k, tests[i].name);
        bad |= !ok;
    }
    return bad;
}

#endif
