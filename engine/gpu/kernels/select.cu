// SPDX-License-Identifier: MIT
// Which form of a kernel a launch takes: the default (newer) one, or the previous one kept
// for A/B measurement when ARB_ENGINE_OLD lists it ("moe", or "all").
#include "gpu/kernels/kernels.h"

#include <cstdlib>
#include <cstring>

namespace arbk {

bool use_old(const char *kernel)
{
    const char *v = getenv("ARB_ENGINE_OLD");
    if (!v || !*v)
        return false;
    const size_t n = strlen(kernel);
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((len == 3 && !strncmp(p, "all", 3)) || (len == n && !strncmp(p, kernel, n)))
            return true;
        if (!end)
            break;
        p = end + 1;
    }
    return false;
}

} // namespace arbk
