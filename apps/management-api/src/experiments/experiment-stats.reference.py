# The independent reference of experiment-stats.spec.ts: python3 experiment-stats.reference.py (SciPy 1.17).
import numpy as np, math
from scipy import stats, special
z=stats.norm.ppf(0.975)
print("z", repr(z))
print("t(0.975,7.3)", repr(stats.t.ppf(0.975,7.3)), "t(0.975,1)", repr(stats.t.ppf(0.975,1)), "t(0.025,30)", repr(stats.t.ppf(0.025,30)))
print("I_0.3(2.5,4)", repr(special.betainc(2.5,4,0.3)))
# Newcombe: treatment 12/200 errors, control 5/250
def wilson(x,n):
    p=x/n; d=1+z*z/n; c=(p+z*z/(2*n))/d; h=z*math.sqrt(p*(1-p)/n+z*z/(4*n*n))/d; return c-h,c+h
# cross-check Wilson with statsmodels-free formula via proportion_confint? use scipy binomtest wilson
r=stats.binomtest(12,200).proportion_ci(0.95,method='wilson'); print("wilson12/200", r.low, r.high, wilson(12,200))
x1,n1,x2,n2=12,200,5,250
p1,p2=x1/n1,x2/n2
l1,u1=stats.binomtest(x1,n1).proportion_ci(method='wilson'); l2,u2=stats.binomtest(x2,n2).proportion_ci(method='wilson')
d=p1-p2
print("newcombe", repr(d), repr(d-math.sqrt((p1-l1)**2+(u2-p2)**2)), repr(d+math.sqrt((u1-p1)**2+(p2-l2)**2)))
# Welch
a=np.array([120,135,150,110,160,140,155,130],float); b=np.array([100,98,105,110,95,102,99,101,97,103],float)
res=stats.ttest_ind(a,b,equal_var=False); ci=res.confidence_interval(0.95)
print("welch", repr(a.mean()-b.mean()), repr(ci.low), repr(ci.high), repr(res.df))
# Maritz-Jarrett SE of X(ceil(qn)) on fixed sample
rng=np.random.default_rng(7)
x=np.sort(np.round(rng.lognormal(6,0.5,41)))
y=np.sort(np.round(rng.lognormal(5.8,0.4,37)))
def mj(s,q):
    n=len(s); m=math.ceil(q*n); a=m-1; b=n-m
    i=np.arange(1,n+1); w=special.betainc(a,b,i/n)-special.betainc(a,b,(i-1)/n)
    c1=(w*s).sum(); c2=(w*s*s).sum(); return s[m-1], math.sqrt(c2-c1*c1)
qx,sx=mj(x,0.95); qy,sy=mj(y,0.95)
print("x", list(map(int,x))); print("y", list(map(int,y)))
print("mj", qx, repr(sx), qy, repr(sy), "diff", qx-qy, repr(qx-qy-z*math.hypot(sx,sy)), repr(qx-qy+z*math.hypot(sx,sy)))
