#!/usr/bin/python3
"""Measurement helper (outside the trusted path; numpy/scipy, Debian's
python3-numpy and python3-scipy): lower-bound centres for a construction
instance and the least ||R||_inf of an exact right inverse (A_I R = I) over
all keys, by one LP (scipy/HiGHS, interior point).

  /usr/bin/python3 tools/code_lp.py INSTANCE.json M [--centres C] [--seeds S] [--save PREFIX]

INSTANCE.json: a sphere or ball bundle from `rankcert construct` (inline qk
instance; the ball's key_bias is used).  Centres (then snapped to the
nearest distinct queries):
  riesz      (default on the sphere) a Riesz s = 3 energy code on S^{d-1};
  hex        (default on the ball, r = 2 only) a hexagonal lattice with M
             points, centred in the grid's box;
  kmeans     the producer's own centres (farthest points + Lloyd);
  wall:W     (ball) Riesz s = 3 points in the box with image-charge walls of
             weight W (W = 0.3 did best at beta 16).
It prints eps * min rho per seed: a float LP value, not a proof.  Below 1 it
suggests a neumann certificate of rank M on those rows; with --save PREFIX
it writes PREFIX-seedS-rows.json and PREFIX-seedS-r.npy (float64, N x M),
and tools/add_neumann.py puts them into a bundle, where only `rankcert
verify` decides.  docs/constructions.md ("The LP right inverse on even
centres") has the numbers.  Cost, one core: 15 s at 20 rows x 1681 keys,
620 s at 42 rows.
"""
import argparse,json,time
from fractions import Fraction
import numpy as np
from scipy.optimize import linprog
from scipy import sparse

ap=argparse.ArgumentParser(); ap.add_argument('instance'); ap.add_argument('m',type=int)
ap.add_argument('--centres',default=None); ap.add_argument('--seeds',type=int,default=1); ap.add_argument('--save')
ap.add_argument('--admm',type=float,default=None,metavar='T',help='ADMM feasibility for eps rho = T instead of the LP')
ap.add_argument('--iterations',type=int,default=4000)
a=ap.parse_args()
d=json.load(open(a.instance)); m=a.m; eps=float(Fraction(str(d['eps'])))
def arr(o): return np.array([float(Fraction(str(x))) for x in o['data']]).reshape(o['shape'])
inst=d['instance']; Q=arr(inst['q']); K=arr(inst['k']); beta=float(Fraction(str(inst['scale'])))
S=beta*Q@K.T
if 'key_bias' in inst: S=S+arr(inst['key_bias']).ravel()[None,:]
A=np.exp(S-S.max(1,keepdims=True)); A/=A.sum(1,keepdims=True); n,N=A.shape
centres=a.centres or ('hex' if 'key_bias' in inst else 'riesz')
lo,hi=Q.min(0),Q.max(0)

def riesz_sphere(seed):
    rng=np.random.default_rng(seed); X=rng.normal(size=(m,Q.shape[1])); X/=np.linalg.norm(X,axis=1,keepdims=True)
    for it in range(3000):
        D=X[:,None,:]-X[None,:,:]; r=np.linalg.norm(D,axis=2)+np.eye(m)
        F=(D/r[:,:,None]**4).sum(1); F-=(F*X).sum(1,keepdims=True)*X
        X+=0.01*F/np.abs(F).max(); X/=np.linalg.norm(X,axis=1,keepdims=True)
    return X
def riesz_box(seed,wall,s=3):
    rng=np.random.default_rng(seed); X=lo+(hi-lo)*rng.random((m,Q.shape[1]))
    for it in range(4000):
        D=X[:,None,:]-X[None,:,:]; r=np.linalg.norm(D,axis=2)+np.eye(m)
        F=(D/r[:,:,None]**(s+2)).sum(1)
        for ax in range(Q.shape[1]):
            dl=X[:,ax]-lo[ax]+1e-3; dh=hi[ax]-X[:,ax]+1e-3
            F[:,ax]+=wall*(1/(2*dl)**(s+1)-1/(2*dh)**(s+1))
        X+=0.002*(hi-lo).max()*F/np.abs(F).max(); X=np.clip(X,lo,hi)
    return X
def hex_lattice():
    if Q.shape[1]!=2: raise SystemExit('code_lp.py: hex centres need a two-dimensional grid')
    best=None
    for sp in np.linspace(0.05,0.6,400):
        pts=[]; ny=int((hi[1]-lo[1])/(sp*np.sqrt(3)/2))+1
        for iy in range(ny):
            sh=(iy%2)*0.5*sp; nx=int((hi[0]-lo[0]-sh)/sp)+1
            pts+=[(lo[0]+sh+ix*sp,lo[1]+iy*sp*np.sqrt(3)/2) for ix in range(nx)]
        pts=np.array(pts); pts+=(lo+hi)/2-(pts.min(0)+pts.max(0))/2
        if len(pts)==m: return pts
        if len(pts)>=m and (best is None or len(pts)<len(best)): best=pts
    return best[:m]   # no lattice with exactly M points: a truncated one
def kmeans():
    # the producer's centres (construct.cpp): farthest-point prefix, 25 Lloyd steps
    order=[0]; dist=((Q-Q[0])**2).sum(1)
    while len(order)<m: j=int(np.argmax(dist)); order.append(j); dist=np.minimum(dist,((Q-Q[j])**2).sum(1))
    C=Q[order].copy()
    for it in range(25):
        lab=np.argmin(((Q[:,None,:]-C[None,:,:])**2).sum(2),axis=1)
        for t in range(m):
            if (lab==t).any(): C[t]=Q[lab==t].mean(0)
    return C
def snap(X):
    I=[]
    for x in X:
        for j in np.argsort(((Q-x)**2).sum(1)):
            if j not in I: I.append(int(j)); break
    return I
def minrho(I):
    AI=sparse.csr_matrix(A[I]); E=sparse.eye(m)
    # R = Rp - Rn, R[j, t] at column j*m + t; (A_I R)_{s,t} = sum_j A_I[s,j] R[j,t]
    Aeq=sparse.hstack([sparse.kron(AI,E),-sparse.kron(AI,E),sparse.csr_matrix((m*m,1))])
    blk=sparse.kron(sparse.eye(N),np.ones((1,m)))
    Aub=sparse.hstack([blk,blk,-np.ones((N,1))])
    c=np.zeros(2*N*m+1); c[-1]=1
    r=linprog(c,A_ub=Aub,b_ub=np.zeros(N),A_eq=Aeq,b_eq=np.eye(m).ravel(),bounds=(0,None),method='highs-ipm')
    if r.status!=0: return np.inf,None
    return r.fun,(r.x[:N*m]-r.x[N*m:2*N*m]).reshape(N,m)
def admm(I,target):
    # Find R with A_I R = I and every row's l1 norm <= target/eps by ADMM
    # between the affine set (projection through (A_I A_I^T)^{-1}) and the
    # product of l1 balls (a sort per row).  Returns the l1-ball iterate, so
    # rho is met and delta = ||I - A_I R||_inf is what is left over; the
    # certificate needs delta + eps rho < 1, not delta = 0.
    AI=A[I]; G=np.linalg.inv(AI@AI.T); Em=np.eye(m); r=target/eps
    def paff(R): return R-AI.T@(G@(AI@R-Em))
    def pl1(V):
        out=V.copy(); av=np.abs(V); rows=np.where(av.sum(1)>r)[0]
        if len(rows)==0: return out
        u=-np.sort(-av[rows],axis=1); cs=np.cumsum(u,axis=1); k=np.arange(1,m+1)
        kk=(u-(cs-r)/k>0).sum(1); th=(cs[np.arange(len(rows)),kk-1]-r)/kk
        out[rows]=np.sign(V[rows])*np.maximum(av[rows]-th[:,None],0); return out
    Z=paff(np.zeros((N,m))); U=np.zeros_like(Z)
    for it in range(a.iterations):
        R=paff(Z-U); Z=pl1(R+U); U+=R-Z
    val=np.abs(Em-AI@Z).sum(1).max()+eps*np.abs(Z).sum(1).max()
    return val,Z
for seed in range(a.seeds):
    if centres=='riesz': X=riesz_sphere(seed)
    elif centres=='hex': X=hex_lattice()
    elif centres=='kmeans': X=kmeans()
    elif centres.startswith('wall:'): X=riesz_box(seed,float(centres[5:]))
    else: raise SystemExit('code_lp.py: --centres is riesz, hex or wall:W')
    I=snap(X); t=time.time()
    if a.admm is not None:
        val,R=admm(I,a.admm); rho=np.abs(R).sum(1).max()
        print(m,centres,seed,'ADMM delta + eps rho %.4f (%.1fs)'%(val,time.time()-t),flush=True)
    else:
        rho,R=minrho(I)
        print(m,centres,seed,'min rho %.4f eps*rho %.4f (%.1fs)'%(rho,eps*rho,time.time()-t),flush=True)
    if a.save and R is not None:
        np.save('%s-seed%d-r.npy'%(a.save,seed),R)
        json.dump({'rows':I,'float_rho':rho,'eps':d['eps'],'centres':centres,'count':m,'seed':seed},
                  open('%s-seed%d-rows.json'%(a.save,seed),'w'))
