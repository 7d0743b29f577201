"""Every one-pass row of ab/: main (o*) against the branch (n*), by the row blocks a KV head takes."""
import json, lzma, os


def rows_of(d):  # a run's results.json, packed (.xz) or not
    path = f'{d}/results.json'
    return json.load(lzma.open(path + '.xz') if os.path.exists(path + '.xz') else open(path))


import json, sys, statistics
def load(d):
    return {(r['impl'], r['problem']): r for r in rows_of(d)['rows'] if r['status']=='PASS' and r.get('median_us')}
out = []
for s in (86, 46, 50):
    o, n = load(f'ab/o{s}'), load(f'ab/n{s}')
    for k, rn in n.items():
        if k not in o or rn['variant'] not in ('dense','paged'): continue
        ro = o[k]
        qh, kvh, hd = map(int, rn['problem'].split()[1].split('/'))
        rows = 8 * qh // kvh
        cfg = rn['config']
        bh = cfg.get('BLOCK_H') or cfg.get('block_h')
        blocks = -(-rows // bh) if bh else None
        ch = rn['median_us']/ro['median_us']-1
        out.append((rn['backend'], blocks, ch, rn['impl'], rn['problem'], ro['median_us'], rn['median_us'], ro['ci_lo_us'],ro['ci_hi_us'],rn['ci_lo_us'],rn['ci_hi_us'], rn['kv_bytes']))
for b in ('gluon','triton'):
    for multi in (False, True):
        sel = [x for x in out if x[0]==b and ((x[1] or 1)>1)==multi]
        chs = sorted(x[2]*100 for x in sel)
        print(b, 'multi' if multi else 'single', len(sel), 'median %+.1f%%' % statistics.median(chs), 'range %+.1f..%+.1f' % (chs[0], chs[-1]))
        if multi:
            for x in sorted(sel, key=lambda x: x[2]):
                print('   %+6.1f%% %-13s blocks %d  %8.1f -> %8.1f us  kv %6.0f MB  %s' % (x[2]*100, x[3], x[1], x[5], x[6], x[11]/1e6, x[4]))
print('--- controls beyond 4 % and CIs')
for x in sorted(out, key=lambda x: x[2]):
    if abs(x[2]) > 0.04 and (x[1] or 1) == 1 or '86.5 ' in x[4] or '50.9 ' in x[4]:
        print('   %+6.1f%% %-13s blocks %s  old %.1f [%.1f, %.1f] new %.1f [%.1f, %.1f] %s' % (x[2]*100, x[3], x[1], x[5], x[7], x[8], x[6], x[9], x[10], x[4]))
