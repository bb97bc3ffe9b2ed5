"""How much of the operands stream-K's order of the streamed tiles reads from DRAM: an LRU model of L2 (25 or
40 MB of 64-k operand tiles), every worker advancing one K step per time step, the workers' accesses of one step
interleaved.  Run from the repository root: ``PYTHONPATH=. python measure/results/timing/sklru.py``."""
from collections import OrderedDict
from kernels.gemm.streamk import ws_schedule, raster
def sim(M,N,K,bn,panel,dp_waves=0,cap_mb=40, workers=132):
    s=ws_schedule(M,N,K,bn,64,workers,dp_waves)
    ipt=s.iters_per_tile
    # per worker list of (mb,nb,k) in order
    seqs=[]
    for w in range(workers):
        seq=[]
        for t in range(s.dp_rounds):
            mb,nb=raster(t*workers+w,panel,s.grid_m,s.grid_n)
            seq+= [(mb,nb,k) for k in range(ipt)]
        for (slot,lt,k0,n) in s.pieces()[w]:
            mb,nb=raster(s.dp_tiles+lt,panel,s.grid_m,s.grid_n)
            seq+=[(mb,nb,k0+i) for i in range(n)]
        seqs.append(seq)
    cap=cap_mb*2**20
    lru=OrderedDict(); size=0; miss=0; tot=0
    Ab=128*64*2; Bb=bn*64*2
    T=max(len(q) for q in seqs)
    for t in range(T):
        for w in range(workers):
            if t<len(seqs[w]):
                mb,nb,k=seqs[w][t]
                for key,b in ((('A',mb,k),Ab),(('B',nb,k),Bb)):
                    tot+=b
                    if key in lru: lru.move_to_end(key)
                    else:
                        miss+=b; lru[key]=b; size+=b
                        while size>cap:
                            _,v=lru.popitem(last=False); size-=v
    return tot/1e6, miss/1e6, T
CASES = [(1536,1536,8192,256,8,0),(1536,1536,8192,256,0,0),(1536,1536,8192,256,1,0),(1536,1536,8192,256,2,0),(1536,1536,8192,256,4,0),(1536,1536,8192,256,12,0),(1536,1536,8192,128,8,-1),(2048,2048,8192,256,8,-1),(2048,2048,8192,256,8,0),(2048,2048,8192,256,0,0),(1024,1024,16384,256,8,0),(1024,1024,16384,256,0,0)]
for args in CASES:
    for cap in (25,40):
        tot,miss,T=sim(*args[:5],dp_waves=args[5],cap_mb=cap)
        print(args,cap,'MB: L2->SM %.0f MB, DRAM %.0f MB, steps %d'%(tot,miss,T))
