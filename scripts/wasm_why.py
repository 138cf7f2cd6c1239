#!/usr/bin/env python3
"""What keeps code in the main wasm, and what would leave it (scripts/size.sh prints where the bytes are;
this says why they are there). Rebuilds the dependency graph wasm-split-cli cuts the wasm by (the
relocations of the linked wasm, which scripts/build-wasm.sh links with --emit-relocs): functions and
data symbols reachable from the main module's roots (its exports and the table's visible functions)
without passing a split point. Sizes are the linked wasm's, before wasm-opt (about 0.23 brotli byte
per byte in the shipped main wasm).

Usage: scripts/wasm_why.py [RAW] --top [PATTERN] [N]   nodes by what leaves the main wasm if they do
                                                      (their dominator subtree), names matching PATTERN
       scripts/wasm_why.py [RAW] --why PATTERN        a path from a main root to each matching node
       scripts/wasm_why.py [RAW] --cut PATTERN...     what leaves if every node matching each pattern
                                                      were behind a split point (alone, then all)
RAW defaults to target/wasm32-unknown-unknown/wasm-release/memoire.wasm (the last `trunk build`).
Only the standard library (and wasm_size.py beside it).
"""
import sys, re, collections, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wasm_size as w
leb=w.leb
def sleb(b,i):
    r=s=0
    while True:
        x=b[i]; i+=1; r|=(x&0x7f)<<s; s+=7
        if x<0x80:
            if x&0x40: r-=1<<s
            return r,i
ADDEND={3,4,5,8,9,11,14,15,16,17,21,22,23,25}
def load(path):
    b=open(path,'rb').read()
    secs=[]; i=8
    while i<len(b):
        sid=b[i]; size,j=leb(b,i+1); secs.append((sid,j,b[j:j+size])); i=j+size
    nimp=0; names={}; exports=[]; bodies=[]; syms=[]; relocs={}; segs=[]; elems=set(); code_idx=data_idx=None
    for k,(sid,off,p) in enumerate(secs):
        if sid==2: nimp=w.count_imported_functions(p)
        elif sid==7:
            n,i=leb(p,0)
            for _ in range(n):
                ln,i=leb(p,i); nm=p[i:i+ln].decode(); i+=ln; kind=p[i]; i+=1; idx,i=leb(p,i)
                exports.append((nm,kind,idx))
        elif sid==9:
            n,i=leb(p,0)
            for _ in range(n):
                flags,i=leb(p,i); assert flags==0, flags
                assert p[i]==0x41; _,i=sleb(p,i+1); assert p[i]==0x0b; i+=1
                cnt,i=leb(p,i)
                for _ in range(cnt):
                    f,i=leb(p,i); elems.add(f)
        elif sid==10:
            code_idx=k
            n,i=leb(p,0)
            for _ in range(n):
                size,j=leb(p,i); bodies.append((j,j+size)); i=j+size
        elif sid==11:
            data_idx=k
            n,i=leb(p,0)
            for _ in range(n):
                flags,i=leb(p,i)
                if flags==0:
                    assert p[i]==0x41; mo,i=sleb(p,i+1); assert p[i]==0x0b; i+=1
                else: raise Exception('seg flags %d'%flags)
                ln,i=leb(p,i); segs.append((i,ln,mo)); i+=ln
        elif sid==0:
            cname,rest=w.name_of(p)
            if cname=='name': names=w.function_names(rest)
            elif cname=='linking':
                ver,i=leb(rest,0)
                while i<len(rest):
                    t=rest[i]; size,j=leb(rest,i+1); body=rest[j:j+size]; i=j+size
                    if t!=8: continue
                    n,q=leb(body,0)
                    for _ in range(n):
                        kind=body[q]; q+=1; flags,q=leb(body,q)
                        if kind in (0,2,4,5):
                            idx,q=leb(body,q); nm=None
                            if not (flags&0x10) or (flags&0x40):
                                ln,q=leb(body,q); nm=body[q:q+ln].decode('utf-8','replace'); q+=ln
                            syms.append(('F' if kind==0 else 'G',flags,idx,nm))
                        elif kind==1:
                            ln,q=leb(body,q); nm=body[q:q+ln].decode('utf-8','replace'); q+=ln
                            if not (flags&0x10):
                                seg,q=leb(body,q); o,q=leb(body,q); sz,q=leb(body,q)
                                syms.append(('D',flags,(seg,o,sz),nm))
                            else: syms.append(('D',flags,None,nm))
                        elif kind==3:
                            idx,q=leb(body,q); syms.append(('S',flags,idx,None))
            elif cname.startswith('reloc.'):
                i=0; target,i=leb(rest,i); n,i=leb(rest,i); L=[]
                for _ in range(n):
                    ty=rest[i]; i+=1; o,i=leb(rest,i); idx,i=leb(rest,i); add=0
                    if ty in ADDEND: add,i=sleb(rest,i)
                    L.append((ty,o,idx,add))
                relocs[target]=L
    return dict(nimp=nimp,names=names,exports=exports,bodies=bodies,syms=syms,relocs=relocs,segs=segs,elems=elems,code_idx=code_idx,data_idx=data_idx)
args = sys.argv[1:]
RAW = args.pop(0) if args and not args[0].startswith('--') else 'target/wasm32-unknown-unknown/wasm-release/memoire.wasm'
M = load(RAW)
nimp=M['nimp']; names=M['names']; syms=M['syms']
import bisect
starts=[s for s,e in M['bodies']]
graph=collections.defaultdict(set)
def node_of_sym(si,ty):
    kind,flags,idx,nm=syms[si]
    if kind=='F': return ('f',idx)
    if kind=='D': return ('d',si)
    return None
for ty,o,idx,add in M['relocs'].get(M['code_idx'],[]):
    if ty in (6,9): continue
    k=bisect.bisect_right(starts,o)-1
    src=('f',nimp+k)
    t=node_of_sym(idx,ty)
    if t: graph[src].add(t)
# data symbols by (segment payload offset)
dsyms=[]
for si,(kind,flags,v,nm) in enumerate(syms):
    if kind=='D' and v is not None:
        seg,o,sz=v; start=M['segs'][seg][0]+o; dsyms.append((start,start+sz,si))
dsyms.sort()
for ty,o,idx,add in M['relocs'].get(M['data_idx'],[]):
    cont=[si for s,e,si in dsyms if s<=o<e]
    t=node_of_sym(idx,ty)
    for si in cont:
        if t: graph[('d',si)].add(t)
def fname(i): return w.demangle_legacy(names.get(i,'?'))
def label(n):
    if n[0]=='f': return 'fn %s'%fname(n[1])[:150]
    kind,flags,v,nm=syms[n[1]]
    return 'data %s (%d B)'%(nm, v[2] if v else -1)
roots=set()
for nm,kind,idx in M['exports']:
    if kind==0 and '__wasm_split' not in nm: roots.add(('f',idx))
for kind,flags,idx,nm in syms:
    if kind=='F' and idx in M['elems'] and ((flags&0x80) or (flags&0x21)==0x21): roots.add(('f',idx))
split_fns=set()
for nm,kind,idx in M['exports']:
    if '__wasm_split' in nm: split_fns.add(('f',idx))
for i in range(nimp):
    if '__wasm_split' in names.get(i,''): split_fns.add(('f',i))
parent={r:None for r in roots}
q=collections.deque(roots)
while q:
    n=q.popleft()
    for t in graph.get(n,()):
        if t in parent or t in split_fns: continue
        parent[t]=n; q.append(t)


def size(n):
    if n[0] == 'f':
        k = n[1] - nimp
        if k < 0:
            return 0
        s, e = M['bodies'][k]
        return e - s
    v = syms[n[1]][2]
    return v[2] if v else 0


def reach(cut=frozenset()):
    seen = set(roots)
    q = collections.deque(roots)
    while q:
        n = q.popleft()
        for t in graph.get(n, ()):
            if t in seen or t in split_fns or t in cut:
                continue
            seen.add(t)
            q.append(t)
    return seen


def dominators():
    """Cooper-Harvey-Kennedy over the main module's graph; returns (idom, subtree bytes)."""
    ROOT = ('root', 0)
    succ = {ROOT: set(roots)}
    for n in parent:
        succ[n] = set(t for t in graph.get(n, ()) if t in parent)
    order, seen, stack = [], {ROOT}, [(ROOT, iter(succ[ROOT]))]
    while stack:
        n, it = stack[-1]
        for t in it:
            if t not in seen:
                seen.add(t)
                stack.append((t, iter(succ.get(t, ()))))
                break
        else:
            order.append(n)
            stack.pop()
    order.reverse()
    idx = {n: i for i, n in enumerate(order)}
    preds = collections.defaultdict(list)
    for n in order:
        for t in succ.get(n, ()):
            preds[t].append(n)
    idom = {ROOT: ROOT}

    def meet(a, b):
        while a != b:
            while idx[a] > idx[b]:
                a = idom[a]
            while idx[b] > idx[a]:
                b = idom[b]
        return a
    changed = True
    while changed:
        changed = False
        for n in order[1:]:
            ps = [p for p in preds[n] if p in idom]
            new = ps[0]
            for p in ps[1:]:
                new = meet(p, new)
            if idom.get(n) != new:
                idom[n] = new
                changed = True
    sub = {n: size(n) for n in order}
    for n in reversed(order[1:]):
        sub[idom[n]] += sub[n]
    return idom, sub


mode = args.pop(0) if args else '--top'
if mode == '--top':
    pat = re.compile(args[0]) if args else re.compile('')
    top = int(args[1]) if len(args) > 1 else 60
    idom, sub = dominators()
    print('main wasm before wasm-opt: %d bytes of code and data reachable' % sub[('root', 0)])
    rows = sorted((n for n in parent if pat.search(label(n))), key=lambda n: -sub[n])[:top]
    for n in rows:
        d = idom.get(n)
        print('%8d  %s   [dominated by %s]' % (sub[n], label(n)[:120], label(d)[:70] if d and d[0] != 'root' else 'a root'))
elif mode == '--why':
    pat = re.compile(args[0])
    for n in [n for n in parent if pat.search(label(n))][:int(os.environ.get('MAX', '5'))]:
        print('==', label(n))
        x = parent[n]
        while x is not None:
            print('   <-', label(x)[:160])
            x = parent[x]
elif mode == '--cut':
    base = reach()
    total = sum(size(n) for n in base)
    every = set()
    for p in args:
        pat = re.compile(p)
        cut = {n for n in base if pat.search(label(n))}
        every |= cut
        print('%8d  %s (%d nodes)' % (total - sum(size(n) for n in reach(cut)), p, len(cut)))
    print('%8d  all of them' % (total - sum(size(n) for n in reach(every))))
else:
    sys.exit(__doc__)
