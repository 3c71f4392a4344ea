#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/sass-loops.py on a fixture of cuobjdump -sass text whose answer is known: sass_loops_test.sh
# SCRIPT TAP_SH. Two functions; the second has a PDL wait, a barrier after it and a loop of two
# shared loads and two mma around a predicated back branch (and a forward branch, not a loop).
# Then --kernel's choice and the refusals: a missing file, a file with no SASS function, a --kernel
# matching none, a --kernel that is not a regular expression. --sb on a fixture with each
# instruction's second word (control bits: the write scoreboard of two LDG SB5, one LDG SB3 and an
# LDS SB0; an HMMA waiting on SB5, one on SB0; and a cp.async loop: LDGSTS, LDGDEPBAR, a counted
# DEPBAR, an LDS SB1; a loop with local memory: an STL waiting on an LDG's scoreboard, one not, an
# LDL), and on the first fixture, which lacks them. --prewait on a fixture whose side path's PDL wait is
# laid out before the main path's loads (counted by address order it would read none), one whose wait
# comes first, one whose unconditional branch jumps over a load, a BRA.DIV (both ways), one with a
# predicated EXIT before its load, and the first fixture's function with no wait.
set -u
script=$1
. "$2"
f="$tmp/k.sass"
cat >"$f" <<'SASS'
	code for sm_90
		Function : _Z3onev
	.headerflags	@"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
                                                                       /* 0x000fe40000000800 */
        /*0010*/                   EXIT ;                              /* 0x000000000000794d */
		Function : _Z6attendPf
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;    /* 0x0000000402047981 */
        /*0020*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0030*/                   STS.128 [R0], R4 ;                  /* 0x0000000400007388 */
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;       /* 0x0000000000007b1d */
        /*0050*/                   LDS.128 R8, [R0] ;                  /* 0x0000000000087984 */
        /*0060*/               @!P0 LDS.128 R12, [R0+0x40] ;           /* 0x00004000000c8984 */
        /*0070*/                   HMMA.16816.F32.BF16 R16, R8, R12, R16 ; /* 0x0000000c0810723c */
        /*0080*/                   HMMA.16816.F32.BF16 R16, R8, R14, R16 ; /* 0x0000000e0810723c */
        /*0090*/                   IADD3 R0, R0, 0x80, RZ ;            /* 0x0000008000007810 */
        /*00a0*/               @!P1 BRA 0x50 ;                         /* 0xfffffffc00e89947 */
        /*00b0*/                @P2 BRA 0xd0 ;                         /* 0x0000000000042947 */
        /*00c0*/                   MUFU.EX2 R3, R3 ;                   /* 0x0000000300037308 */
        /*00d0*/                   STG.E [R2.64], R16 ;                /* 0x0000001002007986 */
        /*00e0*/                   EXIT ;                              /* 0x000000000000794d */
SASS
python3 "$script" "$f" >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 0 ] && tap OK "the fixture: exit 0" || { sed 's/^/# /' "$tmp/err"; tap FAIL "the fixture: exit $rc"; }
grep -qx "_Z3onev: 2 instructions" "$tmp/out" && tap OK "the first function: 2 instructions" ||
    tap FAIL "the first function's line"
grep -qx "_Z6attendPf: 15 instructions" "$tmp/out" && tap OK "the second function: 15 instructions" ||
    tap FAIL "the second function's line"
grep -q "phase start        -> the PDL wait insns 2  LDS 0  LDG 1 " "$tmp/out" && tap OK "before the wait: 2, one LDG" ||
    tap FAIL "the pre-wait phase"
grep -q "phase the PDL wait -> a barrier    insns 3  LDS 0  LDG 0  STS 1  STG 0  HMMA 0  MUFU 0  BAR 1" "$tmp/out" &&
    tap OK "the wait to the barrier: 3 with the STS and the barrier" || tap FAIL "the wait-to-barrier phase"
grep -q "phase a barrier    -> end          insns 10  LDS 2  LDG 0  STS 0  STG 1  HMMA 2  MUFU 1  BAR 0  insns/2 HMMA 10.0" "$tmp/out" &&
    tap OK "after the barrier: 10, the predicated LDS counted, MUFU, STG" || tap FAIL "the last phase"
grep -qx "  loop 0050-00a0 insns 6  LDS 2  LDG 0  STS 0  STG 0  HMMA 2  MUFU 0  BAR 0  insns/2 HMMA 6.0" "$tmp/out" &&
    tap OK "the loop: 0x50-0xa0, 6 instructions, 6 a pair of HMMA" || tap FAIL "the loop line"
[ "$(grep -c '^  loop' "$tmp/out")" = 1 ] && tap OK "the forward branch is not a loop" || tap FAIL "loops: $(grep -c '^  loop' "$tmp/out")"
python3 "$script" --kernel attend "$f" >"$tmp/out2" 2>&1
{ [ $? -eq 0 ] && ! grep -q "_Z3onev" "$tmp/out2" && grep -q "_Z6attendPf" "$tmp/out2"; } &&
    tap OK "--kernel attend: the second function only" || tap FAIL "--kernel attend"
tap_refused "a missing file" "'$tmp/none.sass': cannot read it" python3 "$script" "$tmp/none.sass"
echo "not sass" >"$tmp/text"
tap_refused "a file with no function" "no SASS function in it" python3 "$script" "$tmp/text"
tap_refused "a --kernel matching none" "no function matches --kernel 'gate_up' (2 functions)" python3 "$script" --kernel gate_up "$f"
tap_refused "a bad --kernel" "not a regular expression" python3 "$script" --kernel "(" "$f"
g="$tmp/sb.sass"
cat >"$g" <<'SASS'
		Function : _Z4rollPf
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
                                                                       /* 0x000fc20000000000 */
        /*0010*/                   LDG.E.64 R4, desc[UR4][R2.64] ;     /* 0x0000000402047981 */
                                                                       /* 0x000f420000000000 */
        /*0020*/                   LDG.E.64 R6, desc[UR4][R2.64+0x8] ; /* 0x0000080402067981 */
                                                                       /* 0x000f420000000000 */
        /*0030*/                   LDG.E R8, desc[UR4][R2.64+0x10] ;   /* 0x0000100402087981 */
                                                                       /* 0x000ec20000000000 */
        /*0040*/                   LDS.128 R12, [R0] ;                 /* 0x00000000000c7984 */
                                                                       /* 0x000e020000000000 */
        /*0050*/                   HMMA.16816.F32.BF16 R16, R4, R12, R16 ; /* 0x0000000c0410723c */
                                                                       /* 0x020fc20000000000 */
        /*0060*/                   HMMA.16816.F32.BF16 R16, R6, R14, R16 ; /* 0x0000000e0610723c */
                                                                       /* 0x001fc20000000000 */
        /*0070*/                   IADD3 R2, R2, 0x80, RZ ;            /* 0x0000008002027810 */
                                                                       /* 0x000fc20000000000 */
        /*0080*/               @!P0 BRA 0x10 ;                         /* 0xfffffff800e48947 */
                                                                       /* 0x000fc20000000000 */
        /*0090*/                   EXIT ;                              /* 0x000000000000794d */
                                                                       /* 0x000fc20000000000 */
		Function : _Z3cpaPf
        /*0000*/                   LDGSTS.E.64 [R9], desc[UR4][R12.64] ; /* 0x000000000c097fae */
                                                                       /* 0x000fc20000000000 */
        /*0010*/                   LDGDEPBAR ;                         /* 0x00000000000079af */
                                                                       /* 0x000e020000000000 */
        /*0020*/                   DEPBAR.LE SB0, 0x1 ;                /* 0x000080000000791a */
                                                                       /* 0x000fc20000000000 */
        /*0030*/                   LDS.64 R4, [R9] ;                   /* 0x0000000009047984 */
                                                                       /* 0x000e420000000000 */
        /*0040*/                   HMMA.16816.F32.BF16 R16, R4, R12, R16 ; /* 0x0000000c0410723c */
                                                                       /* 0x002fc20000000000 */
        /*0050*/               @!P0 BRA 0x0 ;                          /* 0xfffffff800e48947 */
                                                                       /* 0x000fc20000000000 */
		Function : _Z5spillPf
        /*0000*/                   LDG.E R8, desc[UR4][R2.64] ;        /* 0x0000000402087981 */
                                                                       /* 0x000e820000000000 */
        /*0010*/                   STL [R1], R8 ;                      /* 0x0000000801007387 */
                                                                       /* 0x004fc20000000000 */
        /*0020*/                   LDG.E R9, desc[UR4][R2.64+0x4] ;    /* 0x0000040402097981 */
                                                                       /* 0x000e820000000000 */
        /*0030*/                   LDL R10, [R1] ;                     /* 0x0000000001007983 */
                                                                       /* 0x000ec20000000000 */
        /*0040*/                   STL [R1+0x4], R11 ;                 /* 0x0000040b01007387 */
                                                                       /* 0x000fc20000000000 */
        /*0050*/               @!P0 BRA 0x0 ;                          /* 0xfffffff800e48947 */
                                                                       /* 0x000fc20000000000 */
SASS
python3 "$script" --sb --kernel roll "$g" >"$tmp/out3" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out3"
[ $rc -eq 0 ] && tap OK "--sb: exit 0" || tap FAIL "--sb: exit $rc"
grep -qx "  loop 0010-0080 insns 8  LDS 1  LDG 3  STS 0  STG 0  HMMA 2  MUFU 0  BAR 0  insns/2 HMMA 8.0" "$tmp/out3" &&
    tap OK "--sb: the loop line as without it" || tap FAIL "--sb: the loop line"
grep -qx "    scoreboards: loads set LDG SB3 x1 SB5 x2; LDS SB0 x1; waits on a global load's: 1 (0050 SB5)" "$tmp/out3" &&
    tap OK "--sb: the loads' scoreboards, the one wait on a global load's (not the LDS's)" ||
    tap FAIL "--sb: the scoreboards line"
python3 "$script" --sb --kernel spill "$g" >"$tmp/out7" 2>&1
grep -qx "    scoreboards: loads set LDG SB2 x2; waits on a global load's: 1 (0010 SB2); local memory: STL 2 LDL 1, 1 STL waiting on a global load's scoreboard" "$tmp/out7" &&
    tap OK "--sb: a loop's local memory, and the STL that waits on a global load (not the other)" ||
    tap FAIL "--sb: the spill loop: $(grep scoreboards "$tmp/out7")"
python3 "$script" --sb --kernel cpa "$g" >"$tmp/out6" 2>&1
sed 's/^/# /' "$tmp/out6"
grep -qx "    scoreboards: loads set LDS SB1 x1; waits on a global load's: 0; counted waits (DEPBAR): 1" "$tmp/out6" &&
    tap OK "--sb: a cp.async loop's counted wait, its LDGSTS and LDGDEPBAR not loads" || tap FAIL "--sb: the cp.async loop"
if [ -s "$tmp/out3" ] && [ -s "$tmp/out6" ] && ! grep -q "local memory" "$tmp/out3" "$tmp/out6"; then
    tap OK "--sb: no local memory part where a loop has none"
else
    tap FAIL "--sb: local memory named where a loop has none (or no output)"
fi
python3 "$script" --kernel roll "$g" >"$tmp/out4" 2>&1
{ [ $? -eq 0 ] && ! grep -q scoreboards "$tmp/out4"; } && tap OK "without --sb: no scoreboards line" ||
    tap FAIL "without --sb: a scoreboards line or an error"
python3 "$script" --sb --kernel attend "$f" >"$tmp/out5" 2>&1
grep -qx "    scoreboards: not in the input (each instruction's second word, on the line after it)" "$tmp/out5" &&
    tap OK "--sb on text without second words: says so" || tap FAIL "--sb without second words"
h="$tmp/pre.sass"
cat >"$h" <<'SASS'
		Function : _Z4gemvPf
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
        /*0010*/                   ISETP.GE.AND P0, PT, R0, R3, PT ;   /* 0x000000030000720c */
        /*0020*/              @!P0 BRA 0x60 ;                          /* 0x0000000000008947 */
        /*0030*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0040*/                   EXIT ;                              /* 0x000000000000794d */
        /*0050*/                   BRA 0x50;                           /* 0xfffffffc00fc7947 */
        /*0060*/                   LDG.E.128 R4, desc[UR4][R2.64] ;    /* 0x0000000402047981 */
        /*0070*/                   CCTL.E.PF2 [R2+0x1000] ;            /* 0x000010000200798f */
        /*0080*/                   LDGSTS.E [R9], desc[UR4][R12.64] ;  /* 0x000000000c097fae */
        /*0090*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*00a0*/                   LDG.E R8, desc[UR4][R6.64] ;        /* 0x0000000406087981 */
        /*00b0*/                   EXIT ;                              /* 0x000000000000794d */
		Function : _Z5embedPf
        /*0000*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0010*/                   LDG.E.U16.CONSTANT R4, desc[UR4][R2.64] ; /* 0x0000000402047981 */
        /*0020*/                   EXIT ;                              /* 0x000000000000794d */
		Function : _Z4skipPf
        /*0000*/                   BRA 0x20 ;                          /* 0x0000000000047947 */
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;        /* 0x0000000402047981 */
        /*0020*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0030*/                   EXIT ;                              /* 0x000000000000794d */
		Function : _Z3divPf
        /*0000*/                   BRA.DIV UR4, 0x30 ;                 /* 0x0000000604007947 */
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;        /* 0x0000000402047981 */
        /*0020*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0030*/                   LDG.E R5, desc[UR4][R2.64+0x4] ;    /* 0x0000040402057981 */
        /*0040*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0050*/                   EXIT ;                              /* 0x000000000000794d */
		Function : _Z4exitPf
        /*0000*/               @P0 EXIT ;                              /* 0x000000000000094d */
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;        /* 0x0000000402047981 */
        /*0020*/                   ACQBULK ;                           /* 0x000000000000782e */
        /*0030*/                   EXIT ;                              /* 0x000000000000794d */
SASS
python3 "$script" --prewait "$h" >"$tmp/out8" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out8"
[ $rc -eq 0 ] && tap OK "--prewait: exit 0" || tap FAIL "--prewait: exit $rc"
grep -qx "  before the PDL wait: 2 global loads (LDG 1, LDGSTS 1, bulk 0), 1 L2 prefetches reachable from the entry; waits at 0030 0090" "$tmp/out8" &&
    tap OK "--prewait: the main path's loads and prefetch past a side path's wait laid out first, not the load after the wait" ||
    tap FAIL "--prewait: the branching kernel"
grep -A1 "_Z5embedPf" "$tmp/out8" | grep -qx "  before the PDL wait: no global load reachable from the entry; waits at 0000" &&
    tap OK "--prewait: a wait before every load" || tap FAIL "--prewait: the wait-first kernel"
grep -A1 "_Z4skipPf" "$tmp/out8" | grep -qx "  before the PDL wait: no global load reachable from the entry; waits at 0020" &&
    tap OK "--prewait: a load an unconditional branch jumps over is not reached" || tap FAIL "--prewait: the skipped load"
grep -A1 "_Z3divPf" "$tmp/out8" | grep -qx "  before the PDL wait: 2 global loads (LDG 2, LDGSTS 0, bulk 0) reachable from the entry; waits at 0020 0040" &&
    tap OK "--prewait: a BRA.DIV goes both ways (its target read, not an unfollowed branch)" || tap FAIL "--prewait: the BRA.DIV"
grep -A1 "_Z4exitPf" "$tmp/out8" | grep -qx "  before the PDL wait: 1 global loads (LDG 1, LDGSTS 0, bulk 0) reachable from the entry; waits at 0020" &&
    tap OK "--prewait: a predicated EXIT falls through to the load" || tap FAIL "--prewait: the predicated EXIT"
python3 "$script" --prewait --kernel one "$f" >"$tmp/out9" 2>&1
grep -qx "  before the PDL wait: no PDL wait (ACQBULK) in it" "$tmp/out9" &&
    tap OK "--prewait: a function with no wait says so" || tap FAIL "--prewait: no wait"
python3 "$script" --kernel gemv "$h" >"$tmp/out10" 2>&1
{ [ $? -eq 0 ] && ! grep -q "before the PDL wait" "$tmp/out10"; } && tap OK "without --prewait: no such line" ||
    tap FAIL "without --prewait: a pre-wait line or an error"
echo "1..$n"
exit $bad
