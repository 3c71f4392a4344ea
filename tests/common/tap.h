/* SPDX-License-Identifier: MIT */
/*
 * The TAP producer of every C test: a table of named tests (each runnable alone by
 * name), asserts that print both sides, an explicit skip, and, for checkers whose
 * checks come from data (rows of a results file), one "ok N - what" per tap_ok.
 *
 *   static void t_parse(void) { TAP_EQ_INT(parse("4K"), 4096); }
 *   static void t_gpu(void) { if (!have_gpu) TAP_SKIP("no CUDA device visible"); ... }
 *   int main(int argc, char **argv) {
 *       static const tap_test_t tests[] = {{"parse", t_parse}, {"gpu", t_gpu}};
 *       return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
 *   }
 *
 * Asserts record a failure and go on (TAP_CHECK, TAP_EQ_*) or leave the test
 * (TAP_REQUIRE). Under MPI, tap_set_agree() makes every test's verdict the same on
 * every rank (failed anywhere = failed) and only rank 0 prints the TAP lines; other
 * ranks' diagnostics go to stderr. Exit status of tap_main/tap_done: 0 when nothing
 * failed, 1 otherwise (meson's TAP protocol shows a test whose lines are all "# SKIP"
 * as skipped, and reads exit status 77 as an error). tap_skip_all() is the plan line
 * of a program that cannot run here at all ("1..0 # SKIP why").
 */
#ifndef ARB_TESTS_TAP_H
#define ARB_TESTS_TAP_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define TAP_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#define TAP_UNUSED_ __attribute__((unused))
#else
#define TAP_PRINTF_(f, a)
#define TAP_UNUSED_
#endif

typedef struct tap_test {
    const char *name;
    void (*fn)(void);
} tap_test_t;

typedef struct tap_state {
    int failed_checks; /* failed asserts so far */
    int skipped;       /* the current test called TAP_SKIP */
    char skip_why[256];
    int n, nfailed, nskipped; /* TAP lines printed, failed, skipped */
    int quiet;          /* this rank prints no TAP lines (MPI rank > 0) */
    int (*agree)(int);  /* MPI: the maximum of a flag over ranks */
} tap_state_t;

static tap_state_t tap_ TAP_UNUSED_;

/* Diagnostics: one "# ..." line (one write) on stdout for the printing rank, stderr elsewhere. */
static void tap_vdiag_(const char *file, int line, const char *fmt, va_list ap)
{
    char msg[1536];
    int n = file ? snprintf(msg, sizeof msg, "# %s:%d: ", file, line) : snprintf(msg, sizeof msg, "# ");
    if (n < 0 || (size_t)n >= sizeof msg)
        n = 0;
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    FILE *f = tap_.quiet ? stderr : stdout;
    fprintf(f, "%s\n", msg);
    fflush(f);
}

static void tap_diag(const char *fmt, ...) TAP_PRINTF_(1, 2) TAP_UNUSED_;
static void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vdiag_(NULL, 0, fmt, ap);
    va_end(ap);
}

static void tap_fail_(const char *file, int line, const char *fmt, ...) TAP_PRINTF_(3, 4) TAP_UNUSED_;
static void tap_fail_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vdiag_(file, line, fmt, ap);
    va_end(ap);
    tap_.failed_checks++;
}

static void tap_set_agree(int (*agree)(int), int quiet) TAP_UNUSED_;
static void tap_set_agree(int (*agree)(int), int quiet)
{
    tap_.agree = agree;
    tap_.quiet = quiet;
}

#define TAP_FAIL_(...) tap_fail_(__FILE__, __LINE__, __VA_ARGS__)

#define TAP_CHECK(cond)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            TAP_FAIL_("check failed: %s", #cond);                                                  \
    } while (0)

/* Leaves the test when cond is false (later steps would only crash or repeat it). */
#define TAP_REQUIRE(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            TAP_FAIL_("required: %s", #cond);                                                      \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define TAP_EQ_INT(a, b)                                                                           \
    do {                                                                                           \
        long long tap_a_ = (long long)(a), tap_b_ = (long long)(b);                                \
        if (tap_a_ != tap_b_)                                                                      \
            TAP_FAIL_("%s == %s: got %lld, expected %lld", #a, #b, tap_a_, tap_b_);                \
    } while (0)

#define TAP_EQ_U64(a, b)                                                                           \
    do {                                                                                           \
        unsigned long long tap_a_ = (unsigned long long)(a), tap_b_ = (unsigned long long)(b);     \
        if (tap_a_ != tap_b_)                                                                      \
            TAP_FAIL_("%s == %s: got %llu, expected %llu", #a, #b, tap_a_, tap_b_);                \
    } while (0)

#define TAP_EQ_STR(a, b)                                                                           \
    do {                                                                                           \
        const char *tap_a_ = (a), *tap_b_ = (b);                                                   \
        if (!tap_a_ || !tap_b_ || strcmp(tap_a_, tap_b_))                                          \
            TAP_FAIL_("%s == %s: got \"%s\", expected \"%s\"", #a, #b, tap_a_ ? tap_a_ : "(null)", \
                      tap_b_ ? tap_b_ : "(null)");                                                 \
    } while (0)

/* The string a contains b. */
#define TAP_HAS_STR(a, b)                                                                          \
    do {                                                                                           \
        const char *tap_a_ = (a), *tap_b_ = (b);                                                   \
        if (!tap_a_ || !tap_b_ || !strstr(tap_a_, tap_b_))                                         \
            TAP_FAIL_("%s contains %s: got \"%s\", expected to contain \"%s\"", #a, #b,            \
                      tap_a_ ? tap_a_ : "(null)", tap_b_ ? tap_b_ : "(null)");                     \
    } while (0)

/* |a - b| <= tol. */
#define TAP_NEAR(a, b, tol)                                                                        \
    do {                                                                                           \
        double tap_a_ = (double)(a), tap_b_ = (double)(b), tap_t_ = (double)(tol);                 \
        if (!(fabs(tap_a_ - tap_b_) <= tap_t_))                                                    \
            TAP_FAIL_("%s ~ %s: got %.17g, expected %.17g within %g", #a, #b, tap_a_, tap_b_,     \
                      tap_t_);                                                                     \
    } while (0)

/* Ends the current test as skipped, with the reason. */
#define TAP_SKIP(...)                                                                              \
    do {                                                                                           \
        tap_.skipped = 1;                                                                          \
        snprintf(tap_.skip_why, sizeof tap_.skip_why, __VA_ARGS__);                                \
        return;                                                                                    \
    } while (0)

static void tap_line_(int ok, int skip, const char *why, const char *what)
{
    tap_.n++;
    tap_.nfailed += !ok;
    tap_.nskipped += ok && skip;
    if (tap_.quiet)
        return;
    printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", tap_.n, what, skip ? " # SKIP " : "", skip ? why : "");
    fflush(stdout);
}

/* Data-driven checks: one TAP line per call. */
static void tap_ok(int cond, const char *fmt, ...) TAP_PRINTF_(2, 3) TAP_UNUSED_;
static void tap_ok(int cond, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tap_line_(cond != 0, 0, "", what);
}

static void tap_skip(const char *why, const char *fmt, ...) TAP_PRINTF_(2, 3) TAP_UNUSED_;
static void tap_skip(const char *why, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tap_line_(1, 1, why, what);
}

/* The plan line after data-driven checks; the exit status. A checker that ran no
 * check at all fails: it would otherwise pass on nothing. */
static int tap_done(void) TAP_UNUSED_;
static int tap_done(void)
{
    if (tap_.n == 0) {
        tap_diag("no checks ran");
        tap_.nfailed = 1;
    }
    if (!tap_.quiet)
        printf("1..%d\n", tap_.n);
    return tap_.nfailed ? 1 : 0;
}

/* Nothing can run here (no GPU): the whole program is one skip. Returns 0. */
static int tap_skip_all(const char *fmt, ...) TAP_PRINTF_(1, 2) TAP_UNUSED_;
static int tap_skip_all(const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (!tap_.quiet)
        printf("1..0 # SKIP %s\n", why);
    fflush(stdout);
    return 0;
}

/* Runs every test, or only those named in argv[1..]. Exit status as tap_done's. */
static int tap_main(const tap_test_t *tests, size_t n, int argc, char **argv) TAP_UNUSED_;
static int tap_main(const tap_test_t *tests, size_t n, int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        size_t i = 0;
        while (i < n && strcmp(argv[a], tests[i].name))
            i++;
        if (i == n) {
            fprintf(stderr, "unknown test '%s'; the tests are:", argv[a]);
            for (i = 0; i < n; i++)
                fprintf(stderr, " %s", tests[i].name);
            fprintf(stderr, "\n");
            return 2;
        }
    }
    size_t planned = 0;
    for (size_t i = 0; i < n; i++) {
        int run = argc < 2;
        for (int a = 1; a < argc; a++)
            run |= !strcmp(argv[a], tests[i].name);
        planned += run;
    }
    if (!tap_.quiet)
        printf("1..%zu\n", planned);
    for (size_t i = 0; i < n; i++) {
        int run = argc < 2;
        for (int a = 1; a < argc; a++)
            run |= !strcmp(argv[a], tests[i].name);
        if (!run)
            continue;
        int before = tap_.failed_checks;
        tap_.skipped = 0;
        tests[i].fn();
        int failed = tap_.failed_checks != before;
        int skipped = tap_.skipped;
        if (tap_.agree) {
            failed = tap_.agree(failed);
            skipped = !failed && tap_.agree(skipped);
        }
        tap_line_(!failed, skipped && !failed, tap_.skip_why, tests[i].name);
    }
    return tap_.nfailed ? 1 : 0;
}

#endif
