#!/usr/bin/python3
"""Put a neumann lower-bound candidate (rows + a float R from an untrusted
search, e.g. tools/code_lp.py --save) into a bundle, as an .npy
sidecar, and raise claim.lower to its rank.  It proves nothing: run
`rankcert verify BUNDLE` afterwards, which alone decides.

  /usr/bin/python3 tools/add_neumann.py BUNDLE.json ROWS.json R.npy NAME [--replace]

ROWS.json: {"rows": [...], ...} (other fields go into "producer").  NAME: the
sidecar's middle name, written as <stem>.NAME.neumann-r.npy beside the bundle.
R is stored in the narrowest float type (<f2, <f4, <f8) whose float estimate
of delta + eps rho stays below 0.99 (it is the exact dyadic values the checker
reads); a candidate whose estimate is not below 1 is refused and the bundle
left alone.  --replace drops the bundle's other neumann certificates (and their
sidecars when no other certificate names them).
"""
import hashlib,json,os,sys
from fractions import Fraction
import numpy as np
args=sys.argv[1:]; replace='--replace' in args; args=[a for a in args if a!='--replace']
if len(args)!=4: sys.exit(__doc__)
bundle,rowsf,rf,name=args
d=json.load(open(bundle)); meta=json.load(open(rowsf)); R=np.load(rf).astype(np.float64)
rows=[int(i) for i in meta['rows']]; eps=float(Fraction(str(d['eps'])))
inst=d['instance']
if inst.get('kind')!='qk' or inst.get('mask','none')!='none' or any('data' not in inst.get(f,{'data':0}) for f in ('q','k','key_bias')):
    sys.exit('add_neumann.py: only inline qk instances without a mask')
def arr(o): return np.array([float(Fraction(str(x))) for x in o['data']]).reshape(o['shape'])
Q=arr(inst['q']); K=arr(inst['k']); beta=float(Fraction(str(inst['scale'])))
S=beta*Q[rows]@K.T
if 'key_bias' in inst: S=S+arr(inst['key_bias']).ravel()[None,:]
AI=np.exp(S-S.max(1,keepdims=True)); AI/=AI.sum(1,keepdims=True)
if R.shape!=(K.shape[0],len(rows)): sys.exit('add_neumann.py: R has shape %s, want %s'%(R.shape,(K.shape[0],len(rows))))
def value(Rt): return np.abs(np.eye(len(rows))-AI@Rt).sum(1).max()+eps*np.abs(Rt).sum(1).max()
for dt in ('<f2','<f4','<f8'):
    Rt=R.astype(dt)
    if np.isfinite(Rt).all() and value(Rt.astype(np.float64))<0.99: break
v=value(Rt.astype(np.float64))
if not v<1:  # cannot verify: leave the bundle as it is
    sys.exit('add_neumann.py: %s: float delta + eps rho is %.4f >= 1, nothing written'%(rf,v))
folder=os.path.dirname(os.path.abspath(bundle)); stem=os.path.basename(bundle)[:-len('.json')]
side='%s.%s.neumann-r.npy'%(stem,name)
np.save(os.path.join(folder,side),Rt)
sha=hashlib.sha256(open(os.path.join(folder,side),'rb').read()).hexdigest()
certs=d['certificates']
if replace:
    gone=[c for c in certs if c.get('kind')=='neumann']
    certs=[c for c in certs if c.get('kind')!='neumann']
    used=json.dumps(certs)
    for c in gone:
        f=c.get('r',{}).get('npy')
        if f and f!=side and f not in used and os.path.exists(os.path.join(folder,f)): os.remove(os.path.join(folder,f))
prod={k:v2 for k,v2 in meta.items() if k!='rows'}; prod.update({'method':'tools/add_neumann.py','float_value':float(v)})
certs.append({'bound':'lower','kind':'neumann','rank':len(rows),'rows':rows,'r':{'npy':side,'sha256':sha},'producer':prod})
d['certificates']=certs
# claim.lower: the largest lower rank left in the bundle (a dropped
# certificate's rank is not kept), so the claim stays supported.
d['claim']['lower']=max(c['rank'] for c in certs if c.get('bound')=='lower')
json.dump(d,open(bundle,'w'),separators=(',',':'),sort_keys=True)
print('%s: neumann rank %d, R as %s (%s), float delta + eps rho %.4f; now run rankcert verify'%(bundle,len(rows),side,dt,v))
