/* SPDX-License-Identifier: MIT */
/* base/outfile.h: the one output rule on real files in a temporary folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "tap.h"

static char dir[] = "/tmp/arb-outfile-XXXXXX";
static const char *const header[] = {"a", "b", "c"};

static const char *put(const char *name, const char *text)
{
    static char path[8][256];
    static unsigned next;
    char *p = path[next++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f)
        fputs(text, f), fclose(f);
    return p;
}

static void t_inputs_and_outputs(void)
{
    char err[1024] = "";
    const char *in = put("in.csv", "a,b,c\n1,2,3\n");
    char alias[300];
    snprintf(alias, sizeof alias, "%s/./in.csv", dir);
    arb_io_file_t others[] = {{"results", in}, {"--dump-logits", NULL}};
    TAP_EQ_INT(arb_out_check("--out", alias, ARB_OUT_FORCE, "--force", others, 2, err, sizeof err), -1);
    TAP_HAS_STR(err, "same file as results");
    char link[300];
    snprintf(link, sizeof link, "%s/link.csv", dir);
    TAP_REQUIRE(symlink(in, link) == 0);
    TAP_EQ_INT(arb_out_check("--out", link, ARB_OUT_APPEND, "--append", others, 1, err, sizeof err), -1);
    /* two outputs that do not exist yet, one path written two ways */
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/new.csv", dir);
    snprintf(b, sizeof b, "%s/../%s/new.csv", dir, strrchr(dir, '/') + 1);
    arb_io_file_t dump[] = {{"--dump-logits", b}};
    TAP_EQ_INT(arb_out_check("--out", a, ARB_OUT_NEW, "--append", dump, 1, err, sizeof err), -1);
    TAP_HAS_STR(err, "--dump-logits");
    TAP_EQ_INT(arb_out_check("--out", a, ARB_OUT_NEW, "--append", others, 2, err, sizeof err), 0);
}

static void t_existing(void)
{
    char err[1024] = "";
    const char *p = put("old.txt", "x\n");
    TAP_EQ_INT(arb_out_check("--out", p, ARB_OUT_NEW, "--force", NULL, 0, err, sizeof err), -1);
    TAP_HAS_STR(err, "give --force to replace it");
    TAP_EQ_INT(arb_out_check("--out", p, ARB_OUT_FORCE, "--force", NULL, 0, err, sizeof err), 0);
    TAP_EQ_INT(arb_out_check("--out", dir, ARB_OUT_FORCE, "--force", NULL, 0, err, sizeof err), -1);
    TAP_HAS_STR(err, "not a regular file");
}

static int rows(const char *text, char *err, size_t len)
{
    return arb_out_check_rows("--out", put("rows.csv", text), header, 3, err, len);
}

static void t_rows(void)
{
    char err[1024] = "";
    TAP_EQ_INT(rows("a,b,c\n1,2,3\n\"x,y\",\"q\"\"\",3\n", err, sizeof err), 0);
    TAP_EQ_INT(rows("", err, sizeof err), 0);
    TAP_EQ_INT(rows("a,b,c\n1,2,3\n4,5", err, sizeof err), -1);
    TAP_HAS_STR(err, "line 3 is an incomplete row");
    TAP_EQ_INT(rows("a,b,c\n1,2,3\n4,5,6", err, sizeof err), -1);
    TAP_HAS_STR(err, "line 3 is an incomplete row");
    TAP_EQ_INT(rows("a,b,c\n1,2,3\n4,51,2,3\n", err, sizeof err), -1);
    TAP_HAS_STR(err, "line 3 has 4 fields");
    TAP_EQ_INT(rows("a,b,d\n1,2,3\n", err, sizeof err), -1);
    TAP_HAS_STR(err, "line 1 is not this command's header");
    TAP_EQ_INT(rows("a,b", err, sizeof err), -1);
    TAP_EQ_INT(rows("a,b,c\n\"1,2,3\n", err, sizeof err), -1);
}

static void t_whole_file(void)
{
    char err[1024] = "", path[300];
    snprintf(path, sizeof path, "%s/whole.txt", dir);
    put("whole.txt", "old\n");
    arb_outfile_t o;
    FILE *f = arb_outfile_open(&o, "--out", path, err, sizeof err);
    TAP_REQUIRE(f);
    fputs("new\n", f);
    char buf[16] = "";
    FILE *r = fopen(path, "r");
    TAP_CHECK(r && fgets(buf, sizeof buf, r) && strcmp(buf, "old\n") == 0); /* untouched until commit */
    if (r)
        fclose(r);
    TAP_EQ_INT(arb_outfile_commit(&o, err, sizeof err), 0);
    r = fopen(path, "r");
    TAP_CHECK(r && fgets(buf, sizeof buf, r) && strcmp(buf, "new\n") == 0);
    if (r)
        fclose(r);
    f = arb_outfile_open(&o, "--out", path, err, sizeof err);
    TAP_REQUIRE(f);
    arb_outfile_discard(&o);
    TAP_CHECK(access(o.tmp, F_OK) != 0);
    char side[300];
    arb_out_side_path("r/x.csv", "memplan", "RUN", ".txt", side, sizeof side);
    TAP_EQ_STR(side, "r/x-memplan-RUN.txt");
    arb_out_side_path("r/x.csv", "", "RUN", ".csv", side, sizeof side);
    TAP_EQ_STR(side, "r/x-RUN.csv");
}

int main(int argc, char **argv)
{
    if (!mkdtemp(dir))
        return 1;
    static const tap_test_t tests[] = {{"inputs_and_outputs", t_inputs_and_outputs}, {"existing", t_existing},
                                       {"rows", t_rows}, {"whole_file", t_whole_file}};
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
