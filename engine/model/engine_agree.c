/* SPDX-License-Identifier: MIT */
/* `arbench engine`'s rank agreement (model/engine_agree.h). */
#include "model/engine_agree.h"

#include <stdlib.h>

#include "model/config.h"
#include "runtime/agree.h"

int arb_engine_agree(const arb_engine_opts_t *o, arb_mpi_t *m, int argc, char **argv, char *msg, size_t len)
{
    static const char *const file_opts[] = {"--config", "--profile", "--prompt-ids", NULL};
    arb_agree_t *a = malloc(sizeof *a);
    if (arb_agree_failure(m, !a, msg, len) >= 0) {
        free(a);
        return -1;
    }
    arb_agree_init(a);
    arb_agree_args(a, argc, argv, file_opts);
    char path[1024];
    /* a shipped name resolves per node (source tree or install): its bytes are what count */
    arb_agree_file(a, "--config", arb_config_path(o->config, path, sizeof path) >= 0 ? path : o->config);
    if (o->profile[0])
        arb_agree_file(a, "--profile", o->profile);
    if (o->prompt_ids[0])
        arb_agree_file(a, "--prompt-ids", o->prompt_ids);
    int rc = arb_agree_check(a, m, msg, len);
    free(a);
    return rc;
}
