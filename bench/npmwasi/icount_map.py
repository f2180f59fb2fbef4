# Self instruction counts per JIT-compiled function (wasm functions by name): callgrind --dump-instr=yes
# --dump-line=no over node --no-liftoff --single-threaded --perf-basic-prof, each address mapped to
# the V8 perf map (/tmp/perf-PID.map) it wrote. docs/wasm.md (issue 29) has the recipe.
#   python3 icount_map.py callgrind.out /tmp/perf-PID.map [TOP]
import sys, bisect, collections, re
cg, pm = sys.argv[1], sys.argv[2]
syms = []
for l in open(pm):
    a, n, name = l.rstrip('\n').split(' ', 2)
    syms.append((int(a, 16), int(n, 16), name))
syms.sort(); starts = [s[0] for s in syms]
cost = collections.Counter(); addr = 0; skip = False; unknown = 0
for l in open(cg):
    if l.startswith('calls='): skip = True; continue
    c0 = l[:1]
    if c0 in '0+-*' and (c0 != '0' or l.startswith('0x')):
        parts = l.split()
        p = parts[0]
        if p.startswith('0x'): addr = int(p, 16)
        elif p[0] == '+': addr += int(p[1:], 16) if p[1:].startswith('0x') else int(p[1:])
        elif p[0] == '-': addr -= int(p[1:], 16) if p[1:].startswith('0x') else int(p[1:])
        if skip: skip = False; continue
        ir = int(parts[1]) if len(parts) > 1 else 0
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < syms[i][0] + syms[i][1]: cost[syms[i][2]] += ir
        else: unknown += ir
tot = sum(cost.values()) + unknown
print('total', tot, 'unmapped', unknown)
for k, v in cost.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 40): print(f'{v:>12} {k}')
