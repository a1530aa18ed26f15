#!/usr/bin/python3
"""Measurement helper (outside the trusted path; numpy/scipy, Debian's
python3-numpy and python3-scipy): lower-bound centres on a sphere instance
from a Riesz-energy spherical code, and the least ||R||_inf of an exact
right inverse (A_I R = I) over all keys, by one LP (scipy/HiGHS).

  /usr/bin/python3 tools/sphere_code_lp.py INSTANCE.json M [SEEDS] [--save PREFIX]

prints eps * min rho per seed (a float LP value, not a proof): below 1
suggests a neumann certificate of rank M on those rows, which only the
checker can confirm once R is written out (it writes no certificate).  docs/constructions.md,
"Where the S^2 gap sits", has the numbers.  Slow: minutes per LP at 1200
keys.  With --save PREFIX it writes PREFIX-seedS-rows.json and
PREFIX-seedS-r.npy (float64, N x M) for tools/add_neumann.py to put into a
bundle, where `rankcert verify` decides.
"""
import json,numpy as np,sys,time
from fractions import Fraction
from scipy.optimize import linprog
from scipy import sparse
args=sys.argv[1:]; save=None
if '--save' in args: i=args.index('--save'); save=args[i+1]; del args[i:i+2]
d=json.load(open(args[0])); m=int(args[1]); eps=float(Fraction(str(d['eps'])))
def arr(o):
    return np.array([float(Fraction(x)) if isinstance(x,str) else float(x) for x in o['data']]).reshape(o['shape'])
Q=arr(d['instance']['q']); K=arr(d['instance']['k']); beta=float(Fraction(str(d['instance']['scale'])))
L=beta*Q@K.T; A=np.exp(L-L.max(1,keepdims=True)); A/=A.sum(1,keepdims=True)
n,N=A.shape
def code(m,seed):
    rng=np.random.default_rng(seed); X=rng.normal(size=(m,3)); X/=np.linalg.norm(X,axis=1,keepdims=True)
    for it in range(3000):
        D=X[:,None,:]-X[None,:,:]; r=np.linalg.norm(D,axis=2)+np.eye(m)
        F=(D/r[:,:,None]**4).sum(1)   # riesz s=3 repulsion
        F-= (F*X).sum(1,keepdims=True)*X
        X+=0.01*F/np.abs(F).max(); X/=np.linalg.norm(X,axis=1,keepdims=True)
    return X
def minrho(I):
    AI=A[I]; mm=len(I)
    # vars: Rp (N*m), Rn (N*m), rho ; R index j*m+t
    Aeq=sparse.hstack([sparse.kron(sparse.csr_matrix(AI),sparse.eye(mm)),-sparse.kron(sparse.csr_matrix(AI),sparse.eye(mm)),sparse.csr_matrix((mm*mm,1))])
    # (AI R)_{s t} = sum_j AI[s,j] R[j,t]; row index s*m+t ; col j*m+t -> kron(AI, I)
    beq=np.eye(mm).ravel()
    blk=sparse.kron(sparse.eye(N),np.ones((1,mm)))
    Aub=sparse.hstack([blk,blk,-np.ones((N,1))])
    c=np.zeros(2*N*mm+1); c[-1]=1
    r=linprog(c,A_ub=Aub,b_ub=np.zeros(N),A_eq=Aeq,b_eq=beq,bounds=(0,None),method='highs-ipm')
    if r.status!=0: return np.inf,None
    x=r.x; R=(x[:N*mm]-x[N*mm:2*N*mm]).reshape(N,mm)
    return r.fun,R
for seed in range(int(args[2]) if len(args)>2 else 2):
    X=code(m,seed)
    I=[]
    for x in X:
        s=K@x
        for j in np.argsort(-s):
            if j not in I: I.append(int(j)); break
    t=time.time(); rho,R=minrho(I)
    if save and R is not None:
        np.save('%s-seed%d-r.npy'%(save,seed),R)
        json.dump({'rows':I,'float_rho':rho,'eps':d['eps'],'centres':m,'seed':seed},open('%s-seed%d-rows.json'%(save,seed),'w'))
    print(m,seed,'min rho %.4f eps*rho %.4f (%.1fs)'%(rho,eps*rho,time.time()-t),flush=True)
