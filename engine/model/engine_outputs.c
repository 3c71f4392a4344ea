/* SPDX-License-Identifier: MIT */
/* `arbench engine`'s outputs (model/engine_outputs.h). */
#include "model/engine_outputs.h"

#include <stdio.h>

#include "base/outfile.h"
#include "model/config.h"

static int check(const arb_engine_opts_t *o, const char *const *header, unsigned ncolumns, char *msg, size_t len)
{
    char config[1024];
    if (arb_config_path(o->config, config, sizeof config) < 0)
        config[0] = '\0';
    const arb_io_file_t files[] = {{"--out", o->out},           {"--dump-tokens", o->dump_tokens},
                                   {"--dump-logits", o->dump_logits}, {"--out-ids", o->out_ids},
                                   {"--config", config},          {"--profile", o->profile},
                                   {"--prompt-ids", o->prompt_ids}};
    const size_t nout = 4, nfiles = sizeof files / sizeof files[0];
    arb_io_file_t others[sizeof files / sizeof files[0]];
    for (size_t i = 0; i < nout; i++) {
        if (!files[i].path[0])
            continue;
        size_t n = 0;
        for (size_t j = 0; j < nfiles; j++)
            if (j != i)
                others[n++] = files[j];
        int rows = i == 0;
        arb_out_mode_t mode = rows ? (o->append ? ARB_OUT_APPEND : ARB_OUT_NEW) : o->force ? ARB_OUT_FORCE : ARB_OUT_NEW;
        if (arb_out_check(files[i].what, files[i].path, mode, rows ? "--append" : "--force", others, n, msg, len))
            return -1;
        if (rows && arb_out_check_rows("--out", o->out, header, ncolumns, msg, len))
            return -1;
    }
    return 0;
}

int arb_engine_check_outputs(const arb_engine_opts_t *o, arb_mpi_t *m, const char *const *header, unsigned ncolumns,
                             char *msg, size_t len)
{
    int bad = m->rank == 0 && check(o, header, ncolumns, msg, len) != 0;
    return arb_agree_failure(m, bad, msg, len) >= 0 ? -1 : 0;
}

void arb_engine_write_memplan(const arb_memplan_t *plan, const char *title, const char *out, const char *run_id)
{
    char path[4400], err[512];
    arb_out_side_path(out, "memplan", run_id, ".txt", path, sizeof path);
    arb_outfile_t f;
    if (!arb_outfile_open(&f, "the memory plan", path, err, sizeof err)) {
        fprintf(stderr, "# %s\n", err);
        return;
    }
    arb_memplan_print(f.f, plan, title);
    if (arb_outfile_commit(&f, err, sizeof err) != 0)
        fprintf(stderr, "# the memory plan %s\n", err);
    else
        printf("# memory plan: %s\n", path);
}
