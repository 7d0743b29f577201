"""The one-pass rows of ab/ and repeat/ side by side: main (o) and the branch (n), three runs each."""
import json, lzma, os


def rows_of(d):  # a run's results.json, packed (.xz) or not
    path = f'{d}/results.json'
    return json.load(lzma.open(path + '.xz') if os.path.exists(path + '.xz') else open(path))


import json, statistics, sys
def load(d):
    try: rows=rows_of(d)['rows']
    except Exception: return {}
    return {(r['impl'], r['problem']): r for r in rows if r['status']=='PASS' and r.get('median_us')}
def blocks(r):
    qh, kvh, hd = map(int, r['problem'].split()[1].split('/'))
    rows = 8*qh//kvh; bh = r['config']['block_h']; return -(-rows//bh)
R = {}
for t in 'on':
    for s in ('86','46'):
        R[(t,s,'A')] = load(f'ab/{t}{s}')
        for r in '12': R[(t,s,r)] = load(f'repeat/{t}{s}r{r}')
print('%-44s %-12s %3s | %7s %7s %7s | %7s %7s %7s | n/o(r2) n/o(A)' % ('problem','impl','blk','oA','o1','o2','nA','n1','n2'))
summary = {}
for s in ('86','46'):
    for k, r in sorted(R[('o',s,'2')].items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if k[0].split('/')[1] not in ('dense','paged'): continue
        v = [R[(t,s,x)].get(k,{}).get('median_us') for t in 'on' for x in 'A12']
        f = lambda x: '%7.1f' % x if x else '      -'
        b = blocks(r)
        r2 = v[5]/v[2]-1 if v[5] and v[2] else None
        rA = v[3]/v[0]-1 if v[3] and v[0] else None
        summary.setdefault((k[0].split('/')[0], b>1), []).append(r2)
        print('%-44s %-12s %3d | %s %s %s | %s %s %s | %+6.1f%% %+6.1f%%' % (k[1][:44], k[0], b, *map(f, v), (r2 or 0)*100, (rA or 0)*100))
for k, v in sorted(summary.items()):
    v = sorted(x*100 for x in v if x is not None)
    print(k, len(v), 'median %+.1f min %+.1f max %+.1f' % (statistics.median(v), v[0], v[-1]))
