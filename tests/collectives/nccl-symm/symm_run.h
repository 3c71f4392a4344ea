/* SPDX-License-Identifier: MIT */
/* Helpers of the symm GPU checks: run a command with its output in a log, print the
 * log as TAP comments, match lsa's params by their variant prefix. */
#ifndef ARB_SYMM_RUN_H
#define ARB_SYMM_RUN_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs argv with stdout and stderr into log; the exit status, or -1. */
static int run_logged(char *const *argv, const char *log) __attribute__((unused));
static int run_logged(char *const *argv, const char *log)
{
    printf("# running:");
    for (char *const *a = argv; *a; a++)
        printf(" %s", *a);
    printf("\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void print_log(const char *log) __attribute__((unused));
static void print_log(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[2048];
    while (f && fgets(line, sizeof line, f))
        printf("#   %s", line);
    if (f)
        fclose(f);
}

/* Every comma-separated item of v (e.g. "variant=oneshot-flagfree,blocks=24,threads=256")
 * is an item of params (describe() inserts defaults such as timeout_ms between them). */
static int prefix_param(const char *params, const char *v) __attribute__((unused));
static int prefix_param(const char *params, const char *v)
{
    while (*v) {
        size_t n = strcspn(v, ",");
        int found = 0;
        for (const char *p = params; *p && !found;) {
            size_t m = strcspn(p, ",");
            found = m == n && strncmp(p, v, n) == 0;
            p += m;
            if (*p == ',')
                p++;
        }
        if (!found)
            return 0;
        v += n;
        if (*v == ',')
            v++;
    }
    return 1;
}

#endif
