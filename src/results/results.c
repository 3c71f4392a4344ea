/* SPDX-License-Identifier: MIT */
#include "results/results.h"

#include "base/outfile.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const arb_result_col_names[ARB_COL_COUNT] = {
#define ARB_COL_NAME(name) #name,
    ARB_RESULT_COLUMNS(ARB_COL_NAME)
#undef ARB_COL_NAME
};

#define ARB_MAX_FIELD (1u << 20)

struct arb_results_writer {
    FILE *f;
    char *path;
};

static int needs_quotes(const char *s)
{
    if (!*s)
        return 0;
    if (s[0] == ' ' || s[strlen(s) - 1] == ' ')
        return 1;
    return strpbrk(s, ",\"\r\n") != NULL;
}

static int write_field(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (needs_quotes(s))
        return csv_fwrite(f, s, strlen(s)) == 0 ? 0 : -1;
    return fputs(s, f) < 0 ? -1 : 0;
}

static int write_fields(FILE *f, const char *const *fields, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i && fputc(',', f) == EOF)
            return -1;
        if (write_field(f, fields[i]))
            return -1;
    }
    return fputc('\n', f) == EOF ? -1 : 0;
}

static int flush_sync(FILE *f)
{
    if (fflush(f))
        return -1;
    return fsync(fileno(f));
}

arb_results_writer_t *arb_results_open(const char *path, char *err, size_t err_len)
{
    return arb_csv_open(path, arb_result_col_names, ARB_COL_COUNT, err, err_len);
}

arb_results_writer_t *arb_csv_open(const char *path, const char *const *header, size_t ncols, char *err,
                                   size_t err_len)
{
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "--out '%s': not a regular file", path);
        return NULL;
    }
    if (exists && st.st_size > 0 && arb_out_check_rows("--out", path, header, ncols, err, err_len) != 0)
        return NULL; /* another header, or a row cut off: appending would glue onto it */
    if (!exists || st.st_size == 0) {
        arb_outfile_t of; /* the header, written whole, then renamed into place */
        FILE *t = arb_outfile_open(&of, "--out", path, err, err_len);
        if (!t)
            return NULL;
        if (write_fields(t, header, ncols)) {
            snprintf(err, err_len, "--out '%s': cannot write (%s)", path, strerror(errno));
            arb_outfile_discard(&of);
            return NULL;
        }
        if (arb_outfile_commit(&of, err, err_len) != 0)
            return NULL;
    }
    arb_results_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->f = fopen(path, "a"))) {
        snprintf(err, err_len, "--out '%s': cannot open for appending (%s)", path, strerror(errno));
        if (w)
            free(w->path);
        free(w);
        return NULL;
    }
    return w;
}

int arb_results_append(arb_results_writer_t *w, const arb_row_t *row)
{
    return arb_csv_append(w, row->f, ARB_COL_COUNT);
}

int arb_csv_append(arb_results_writer_t *w, const char *const *fields, size_t n)
{
    /* Build the row in memory first so that a row reaches the file in one write. */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return -1;
    int bad = write_fields(m, fields, n);
    bad |= fclose(m) != 0;
    if (!bad)
        bad = fwrite(buf, 1, len, w->f) != len || flush_sync(w->f);
    free(buf);
    return bad ? -1 : 0;
}

int arb_results_close(arb_results_writer_t *w)
{
    if (!w)
        return 0;
    int rc = fclose(w->f) ? -1 : 0;
    free(w->path);
    free(w);
    return rc;
}

/* ---- reading ---- */

typedef struct reader {
    arb_table_t *t;
    char **cur;
    size_t ncur, capcur;
    size_t line;
    int failed;
    const char *name;
    char *err;
    size_t err_len;
} reader_t;

static void on_field(void *s, size_t len, void *data)
{
    reader_t *r = data;
    if (r->failed)
        return;
    if (len > ARB_MAX_FIELD) {
        snprintf(r->err, r->err_len, "%s: line %zu: a field of %zu bytes (limit %u)", r->name,
                 r->line + 1, len, ARB_MAX_FIELD);
        r->failed = 1;
        return;
    }
    if (r->ncur == r->capcur) {
        size_t nc = r->capcur ? r->capcur * 2 : 64;
        char **p = realloc(r->cur, nc * sizeof *p);
        if (!p) {
            r->failed = 1;
            snprintf(r->err, r->err_len, "%s: out of memory", r->name);
            return;
        }
        r->cur = p;
        r->capcur = nc;
    }
    char *f = malloc(len + 1);
    if (!f) {
        r->failed = 1;
        snprintf(r->err, r->err_len, "%s: out of memory", r->name);
        return;
    }
    if (len)
        memcpy(f, s, len);
    f[len] = '\0';
    r->cur[r->ncur++] = f;
}

static void drop_cur(reader_t *r)
{
    for (size_t i = 0; i < r->ncur; i++)
        free(r->cur[i]);
    r->ncur = 0;
}

static void on_row(int c, void *data)
{
    (void)c;
    reader_t *r = data;
    r->line++;
    if (r->failed) {
        drop_cur(r);
        return;
    }
    arb_table_t *t = r->t;
    if (!t->header) {
        for (size_t i = 0; i < r->ncur; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(r->cur[i], r->cur[j]) == 0) {
                    snprintf(r->err, r->err_len, "%s: header names column '%s' twice", r->name, r->cur[i]);
                    r->failed = 1;
                    drop_cur(r);
                    return;
                }
        t->header = malloc(r->ncur * sizeof(char *));
        if (!t->header) {
            r->failed = 1;
            drop_cur(r);
            return;
        }
        memcpy(t->header, r->cur, r->ncur * sizeof(char *));
        t->ncols = r->ncur;
        r->ncur = 0;
        return;
    }
    if (r->ncur != t->ncols) {
        snprintf(r->err, r->err_len, "%s: line %zu has %zu fields, the header has %zu", r->name, r->line,
                 r->ncur, t->ncols);
        r->failed = 1;
        drop_cur(r);
        return;
    }
    if ((t->nrows & (t->nrows - 1)) == 0) { /* grow at powers of two */
        size_t nc = t->nrows ? t->nrows * 2 : 1;
        char ***p = realloc(t->rows, nc * sizeof *p);
        if (!p) {
            r->failed = 1;
            drop_cur(r);
            return;
        }
        t->rows = p;
    }
    char **row = malloc(t->ncols * sizeof(char *));
    if (!row) {
        r->failed = 1;
        drop_cur(r);
        return;
    }
    memcpy(row, r->cur, t->ncols * sizeof(char *));
    r->ncur = 0;
    t->rows[t->nrows++] = row;
}

int arb_table_read_mem(const char *data, size_t len, const char *name, arb_table_t *t, char *err,
                       size_t err_len)
{
    memset(t, 0, sizeof *t);
    /* Every writer here ends each row with a newline, in one write: a file whose last
     * byte is not one was cut (a full disk, a killed copy, a partial transfer). */
    if (len && data[len - 1] != '\n') {
        size_t line = 1;
        for (size_t i = 0; i + 1 < len; i++)
            line += data[i] == '\n';
        snprintf(err, err_len, "%s: line %zu (the last row) is cut off: the file does not end with a newline (a truncated copy or an interrupted write?)", name, line);
        return -1;
    }
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        snprintf(err, err_len, "%s: cannot initialise the CSV parser", name);
        return -1;
    }
    reader_t r = {.t = t, .name = name, .err = err, .err_len = err_len};
    int rc = 0;
    if (csv_parse(&p, data, len, on_field, on_row, &r) != len) {
        snprintf(err, err_len, "%s: malformed CSV near line %zu: %s", name, r.line + 1,
                 csv_strerror(csv_error(&p)));
        rc = -1;
    } else if (csv_fini(&p, on_field, on_row, &r) != 0) {
        snprintf(err, err_len, "%s: the last row is cut off (unterminated quoted field)", name);
        rc = -1;
    }
    csv_free(&p);
    drop_cur(&r);
    free(r.cur);
    if (rc == 0 && r.failed)
        rc = -1;
    if (rc == 0 && !t->header) {
        snprintf(err, err_len, "%s: empty file, expected a header row", name);
        rc = -1;
    }
    if (rc)
        arb_table_free(t);
    return rc;
}

int arb_table_read(const char *path, arb_table_t *t, char *err, size_t err_len)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open (%s)", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            char *p = realloc(buf, nc);
            if (!p) {
                free(buf);
                fclose(f);
                snprintf(err, err_len, "%s: out of memory", path);
                return -1;
            }
            buf = p;
            cap = nc;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int ferr = ferror(f);
    fclose(f);
    if (ferr) {
        free(buf);
        snprintf(err, err_len, "%s: read error", path);
        return -1;
    }
    int rc = arb_table_read_mem(buf, len, path, t, err, err_len);
    free(buf);
    return rc;
}

void arb_table_free(arb_table_t *t)
{
    for (size_t i = 0; i < t->nrows; i++) {
        for (size_t j = 0; j < t->ncols; j++)
            free(t->rows[i][j]);
        free(t->rows[i]);
    }
    free(t->rows);
    if (t->header)
        for (size_t j = 0; j < t->ncols; j++)
            free(t->header[j]);
    free(t->header);
    memset(t, 0, sizeof *t);
}

int arb_table_col(const arb_table_t *t, const char *name)
{
    for (size_t j = 0; j < t->ncols; j++)
        if (strcmp(t->header[j], name) == 0)
            return (int)j;
    return -1;
}

int arb_table_require(const arb_table_t *t, const char *const *required, const char *path, char *err,
                      size_t err_len)
{
    for (size_t i = 0; required[i]; i++)
        if (arb_table_col(t, required[i]) < 0) {
            snprintf(err, err_len, "%s: missing column '%s' (is it an arbench results file?)", path, required[i]);
            return -1;
        }
    return 0;
}
