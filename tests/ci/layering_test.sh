#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering check on fixture trees: layering_test.sh CHECKER TAP_SH. A clean tree passes;
# an upward include, a circle, an include of no file, a folder without a rule and a rule
# without a folder each fail with exit 1 and name the file:line, the include and the rule;
# a private header joined to its module by a module rule is no circle.
set -u
checker=$1
. "$2"
rules() {
    cat >"$1/rules" <<'RULES'
scan lib app
roots lib include
generated gen_config.h
everyone include
allow lib/low
allow lib/high   lib/low
allow app        lib
RULES
}
src() { mkdir -p "$(dirname "$1/$2")" && printf '%s\n' "$3" >"$1/$2"; }
# A clean tree: system, public, generated, same-folder and downward includes.
clean() {
    rm -rf "$1" && mkdir -p "$1/include/pub" && rules "$1"
    src "$1" include/pub/api.h '/* public */'
    src "$1" lib/low/a.h '#include <stddef.h>'
    src "$1" lib/low/a.c "$(printf '#include "a.h"\n#include "pub/api.h"\n#include "gen_config.h"')"
    src "$1" lib/high/b.h '#include "low/a.h"'
    src "$1" lib/high/b.c "$(printf '#include "b.h"\n#include "high/b.h"')"
    src "$1" app/main.c "$(printf '#include "high/b.h"\n#include "low/a.h"')"
}
# run NAME: exit status in $rc, stderr and stdout in $t/NAME.out
run() { "$checker" "$t/$1" "$t/$1/rules" >"$t/$1.out" 2>&1; rc=$?; }
has() { grep -qF -- "$2" "$t/$1.out"; }
t=$tmp

clean "$t/clean"; run clean
[ $rc = 0 ] && has clean 'layering: ok: 5 files' && tap OK "clean tree passes" || tap FAIL "clean tree passes (rc $rc: $(cat "$t/clean.out"))"

clean "$t/up"; src "$t/up" lib/low/a.c "$(printf '#include "a.h"\n#include "high/b.h"')"; run up
[ $rc = 1 ] && has up 'lib/low/a.c:2: #include "high/b.h" (lib/high/b.h) is not allowed' &&
    has up 'lib/low may include only itself (allow lib/low in rules)' && tap OK "upward include fails, named" ||
    tap FAIL "upward include fails, named (rc $rc: $(cat "$t/up.out"))"

clean "$t/circle"
src "$t/circle" lib/low/x.h '/* x */'
src "$t/circle" lib/low/x.c "$(printf '#include "x.h"\n#include "y.h"')"
src "$t/circle" lib/low/y.h '/* y */'
src "$t/circle" lib/low/y.c "$(printf '#include "y.h"\n#include "x.h"')"
run circle
[ $rc = 1 ] && has circle 'circle between modules: lib/low/x -> lib/low/y (lib/low/x.c:2), lib/low/y -> lib/low/x (lib/low/y.c:2)' &&
    tap OK "circle of two modules fails, named" || tap FAIL "circle of two modules fails, named (rc $rc: $(cat "$t/circle.out"))"

clean "$t/ring"
src "$t/ring" lib/low/p.h '#include "q.h"'
src "$t/ring" lib/low/q.h '#include "r.h"'
src "$t/ring" lib/low/r.h '#include "p.h"'
run ring
[ $rc = 1 ] && has ring 'lib/low/p -> lib/low/q (lib/low/p.h:1), lib/low/q -> lib/low/r (lib/low/q.h:1), lib/low/r -> lib/low/p (lib/low/r.h:1)' &&
    tap OK "circle of three headers fails, named" || tap FAIL "circle of three headers fails, named (rc $rc: $(cat "$t/ring.out"))"

clean "$t/missing"; src "$t/missing" app/main.c '#include "nowhere.h"'; run missing
[ $rc = 1 ] && has missing 'app/main.c:1: #include "nowhere.h" names no file' && tap OK "include of no file fails" ||
    tap FAIL "include of no file fails (rc $rc: $(cat "$t/missing.out"))"

clean "$t/norule"; src "$t/norule" lib/extra/e.c '/* e */'; run norule
[ $rc = 1 ] && has norule 'folder lib/extra has no "allow lib/extra ..." line' && tap OK "folder without a rule fails" ||
    tap FAIL "folder without a rule fails (rc $rc: $(cat "$t/norule.out"))"

clean "$t/stale"; echo 'allow lib/gone lib/low' >>"$t/stale/rules"; run stale
[ $rc = 1 ] && has stale 'a rule for lib/gone, which holds no source file' && tap OK "rule for a folder without sources fails" ||
    tap FAIL "rule for a folder without sources fails (rc $rc: $(cat "$t/stale.out"))"

# A private header shared by a module's sources, built on its public header.
clean "$t/priv"
src "$t/priv" lib/low/m.h '/* m */'
src "$t/priv" lib/low/m_priv.h '#include "m.h"'
src "$t/priv" lib/low/m.c '#include "m_priv.h"'
run priv
[ $rc = 1 ] && has priv 'circle between modules: lib/low/m -> lib/low/m_priv' && tap OK "private header without a module rule is a circle" ||
    tap FAIL "private header without a module rule is a circle (rc $rc: $(cat "$t/priv.out"))"
echo 'module lib/low/m lib/low/m_priv' >>"$t/priv/rules"; run priv
[ $rc = 0 ] && tap OK "module rule joins the private header" || tap FAIL "module rule joins the private header (rc $rc: $(cat "$t/priv.out"))"

# A <stdint.h> name: included by the file itself, through a header of the tree (two deep, a
# circle among them being no proof), in a comment or a string only (no use); not included at all.
clean "$t/int"
src "$t/int" lib/low/w.h "$(printf '#include <stdint.h>\nuint32_t w(void);')"
src "$t/int" lib/high/b.h "$(printf '#include "low/a.h"\n#include "low/w.h"\nint64_t b(void);')"
src "$t/int" app/c.cu "$(printf '#include <cstdint>\nstd::uint8_t c;')"
src "$t/int" app/d.c "$(printf '/* uint32_t in a comment */\nconst char *d = "uint16_t";')"
# a module's two headers including each other, the <stdint.h> reached from one of them only
src "$t/int" lib/low/m.h "$(printf '#include "m_priv.h"\n#include "w.h"\nuint32_t m;')"
src "$t/int" lib/low/m_priv.h "$(printf '#include "m.h"\nuint16_t p;')"
echo 'module lib/low/m lib/low/m_priv' >>"$t/int/rules"
run int
[ $rc = 0 ] && tap OK "<stdint.h> names included directly or through the tree's headers pass" ||
    tap FAIL "<stdint.h> names included directly or through the tree's headers pass (rc $rc: $(cat "$t/int.out"))"
src "$t/int" app/e.cu "$(printf '#include <cuda_runtime.h>\n#include "high/b.h"\n\n__device__ uintptr_t e;')"
src "$t/int" lib/low/v.h "$(printf '#include <cstdlib>\n#include "v2.h"\nsize_t v; uint64_t v1;')"
src "$t/int" lib/low/v2.h '#include "v.h"'
run int
[ $rc = 1 ] && has int 'lib/low/v.h:3: uses uint64_t but includes no <stdint.h>' && ! has int 'app/e.cu' &&
    ! has int 'app/c.cu' && ! has int 'app/d.c' && tap OK "a <stdint.h> name without the include fails, named" ||
    tap FAIL "a <stdint.h> name without the include fails, named (rc $rc: $(cat "$t/int.out"))"

echo 'allow lib/low' >>"$t/clean/rules"; run clean
[ $rc = 2 ] && has clean 'allow lib/low given twice' && tap OK "bad rules: exit 2" || tap FAIL "bad rules: exit 2 (rc $rc: $(cat "$t/clean.out"))"
echo "1..$n"
exit $bad
