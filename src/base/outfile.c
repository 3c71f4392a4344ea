/* SPDX-License-Identifier: MIT */
/* The one output rule (base/outfile.h). */
#include "base/outfile.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The real path of p, or of its folder joined with its name when p does not exist. */
static int canonical(const char *p, char *buf, size_t len)
{
    char real[PATH_MAX];
    if (realpath(p, real)) {
        snprintf(buf, len, "%s", real);
        return 0;
    }
    const char *slash = strrchr(p, '/');
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == p)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - p), p);
    if (!realpath(dir, real))
        return -1;
    snprintf(buf, len, "%s/%s", real, slash ? slash + 1 : p);
    return 0;
}

int arb_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
    if (canonical(a, ca, sizeof ca) || canonical(b, cb, sizeof cb))
        return strcmp(a, b) == 0;
    return strcmp(ca, cb) == 0;
}

int arb_out_check(const char *what, const char *path, arb_out_mode_t mode, const char *allow,
                  const arb_io_file_t *others, size_t n, char *err, size_t len)
{
    if (!path || !*path) {
        snprintf(err, len, "%s: expected a file path", what);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!others[i].path || !others[i].path[0] || !arb_same_file(path, others[i].path))
            continue;
        snprintf(err, len, "%s '%s' is the same file as %s '%s': a command never writes over its own input or another of its outputs; choose another %s",
                 what, path, others[i].what, others[i].path, what);
        return -1;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, len, "%s '%s': not a regular file", what, path);
        return -1;
    }
    if (mode == ARB_OUT_NEW && st.st_size > 0) {
        if (allow)
            snprintf(err, len, "%s '%s' exists: give %s to %s it, or choose a new file", what, path, allow,
                     strcmp(allow, "--append") == 0 ? "add this run's rows to" : "replace");
        else
            snprintf(err, len, "%s '%s' exists: choose a new file (an existing one is never replaced)", what, path);
        return -1;
    }
    return 0;
}

/* The first line (without its newline) equals the header's names joined by ','? */
static int header_is(const char *line, const char *const *header, size_t ncols)
{
    for (size_t i = 0; i < ncols; i++) {
        size_t hl = strlen(header[i]);
        if (strncmp(line, header[i], hl) != 0 || line[hl] != (i + 1 < ncols ? ',' : '\0'))
            return 0;
        line += hl + 1;
    }
    return 1;
}

int arb_out_check_inputs(const char *what, const char *path, arb_out_mode_t mode, const char *allow,
                         const arb_io_file_t *others, size_t n, char *const *files, size_t nfiles,
                         const char *files_what, char *err, size_t len)
{
    for (size_t i = 0; path && *path && i < nfiles; i++) {
        if (!arb_same_file(path, files[i]))
            continue;
        snprintf(err, len, "%s '%s' is the same file as the %s '%s': a command never writes over its own input; choose another %s",
                 what, path, files_what, files[i], what);
        return -1;
    }
    return arb_out_check(what, path, mode, allow, others, n, err, len);
}

int arb_out_check_rows(const char *what, const char *path, const char *const *header, size_t ncols, char *err,
                       size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *first = NULL;
    size_t cap = 0;
    ssize_t n = getline(&first, &cap, f);
    if (n <= 0) { /* an empty file takes a header like a new one */
        free(first);
        fclose(f);
        return 0;
    }
    int complete = first[n - 1] == '\n';
    first[strcspn(first, "\r\n")] = '\0';
    int same = header_is(first, header, ncols);
    free(first);
    size_t line = 2, fields = 1, chars = 0;
    int quoted = 0, c = '\n', bad_row = 0;
    while (same && complete && (c = getc(f)) != EOF) {
        if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            fields++;
        else if (c == '\n' && !quoted) {
            if (fields != ncols) {
                bad_row = 1;
                break;
            }
            line++, fields = 1, chars = 0;
            continue;
        }
        chars++;
    }
    fclose(f);
    if (!same) {
        snprintf(err, len, "%s '%s': line 1 is not this command's header (another schema?); choose a new file", what, path);
        return -1;
    }
    if (bad_row) {
        snprintf(err, len, "%s '%s': line %zu has %zu fields, the header %zu: the file is damaged; repair or remove the line, or choose a new file",
                 what, path, line, fields, ncols);
        return -1;
    }
    if (!complete || chars || quoted) {
        snprintf(err, len, "%s '%s': line %zu is an incomplete row (no newline at its end: a run cut off, a full disk?); repair or remove the line before appending, or choose a new file",
                 what, path, complete ? line : 1);
        return -1;
    }
    return 0;
}

FILE *arb_outfile_open(arb_outfile_t *o, const char *what, const char *path, char *err, size_t len)
{
    memset(o, 0, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path + 1) : 0;
    snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.tmp.%ld", dl, path, slash ? slash + 1 : path, (long)getpid());
    if (!(o->f = fopen(o->tmp, "w")))
        snprintf(err, len, "%s '%s': cannot create a file in its folder (%s)", what, path, strerror(errno));
    return o->f;
}

int arb_outfile_commit(arb_outfile_t *o, char *err, size_t len)
{
    if (!o->f)
        return -1;
    int bad = fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad || rename(o->tmp, o->path) != 0) {
        snprintf(err, len, "'%s': cannot write (%s); the earlier file, if any, is unchanged", o->path, strerror(errno));
        unlink(o->tmp);
        return -1;
    }
    return 0;
}

void arb_outfile_discard(arb_outfile_t *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
}

void arb_out_side_path(const char *out, const char *tag, const char *run_id, const char *ext, char *buf, size_t len)
{
    size_t n = strlen(out);
    if (n > 4 && strcmp(out + n - 4, ".csv") == 0)
        n -= 4;
    snprintf(buf, len, "%.*s%s%s-%s%s", (int)n, out, *tag ? "-" : "", tag, run_id, ext);
}
