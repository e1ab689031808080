import type { Plan } from '@flagship/domain';
import { Admission } from '@flagship/sse';
import { type AdmittedStream, flagStreamBounds, type FlagStreamLimits } from './flag-stream-admission';

const LIMITS: FlagStreamLimits = { perTenant: { free: 2, standard: 4, premium: 6 }, perUser: 3, perClient: 5, perAddress: 8, perProcess: 10 };

const admission = (limits: FlagStreamLimits) => new Admission<AdmittedStream>(flagStreamBounds(limits));

let n = 0;
const stream = (over: Partial<AdmittedStream> = {}): AdmittedStream & { n: number } => ({
  n: ++n,
  tenantId: `t${n}`,
  plan: 'free',
  callerId: `client:c${n}`,
  address: `10.0.0.${n}`,
  ...over,
});

describe('flagStreamBounds: which flag-data stream a process takes', () => {
  it('gives each tenant its plan\'s allowance: free lower than paid', () => {
    for (const [plan, allowance] of Object.entries(LIMITS.perTenant) as Array<[Plan, number]>) {
      const a = admission(LIMITS);
      for (let i = 0; i < allowance; i++) expect(a.admit(stream({ tenantId: 'acme', plan })).admitted).toBe(true);
      expect(a.admit(stream({ tenantId: 'acme', plan }))).toEqual({ admitted: false, bound: 'tenant', limit: allowance });
      // Another tenant is not held back by it.
      expect(a.admit(stream({ tenantId: 'other', plan })).admitted).toBe(true);
      expect(a.count('tenant', 'acme')).toBe(allowance);
    }
  });

  it('bounds one person across all their tenants, and one OAuth client', () => {
    const a = admission(LIMITS);
    // Three free tenants of one user, one stream each: the third fills the person's bound of 3.
    for (const t of ['a', 'b', 'c']) expect(a.admit(stream({ tenantId: t, callerId: 'user:eve' })).admitted).toBe(true);
    expect(a.admit(stream({ tenantId: 'd', callerId: 'user:eve' }))).toEqual({ admitted: false, bound: 'user', limit: 3 });
    expect(a.admit(stream({ tenantId: 'd', callerId: 'user:bob' })).admitted).toBe(true);

    const b = admission(LIMITS);
    for (let i = 0; i < 5; i++) expect(b.admit(stream({ tenantId: 'big', plan: 'premium', callerId: 'client:app' })).admitted).toBe(true);
    expect(b.admit(stream({ tenantId: 'big', plan: 'premium', callerId: 'client:app' }))).toEqual({ admitted: false, bound: 'client', limit: 5 });
    expect(b.admit(stream({ tenantId: 'big', plan: 'premium', callerId: 'client:other' })).admitted).toBe(true);
  });

  it('bounds one client network across tenants and callers', () => {
    const a = admission(LIMITS);
    for (let i = 0; i < 8; i++) expect(a.admit(stream({ address: '2001:db8:1:2::/64' })).admitted).toBe(true);
    expect(a.admit(stream({ address: '2001:db8:1:2::/64' }))).toEqual({ admitted: false, bound: 'address', limit: 8 });
    expect(a.admit(stream({ address: '2001:db8:1:3::/64' })).admitted).toBe(true);
  });

  it('checks the tenant, then the caller, then the address: the refusal names the first bound reached', () => {
    const a = admission({ ...LIMITS, perTenant: { free: 1, standard: 1, premium: 1 }, perUser: 1, perAddress: 1 });
    const first = stream({ tenantId: 't', callerId: 'user:u', address: 'x' });
    expect(a.admit(first).admitted).toBe(true);
    expect(a.admit(stream({ tenantId: 't', callerId: 'user:u', address: 'x' }))).toMatchObject({ bound: 'tenant' });
    expect(a.admit(stream({ callerId: 'user:u', address: 'x' }))).toMatchObject({ bound: 'user' });
    expect(a.admit(stream({ address: 'x' }))).toMatchObject({ bound: 'address' });
  });

  it('a refused stream counts nowhere, and a released one frees every bound it held, once', () => {
    const a = admission({ ...LIMITS, perTenant: { free: 1, standard: 1, premium: 1 } });
    const held = stream({ tenantId: 't', callerId: 'user:u', address: 'x' });
    expect(a.admit(held).admitted).toBe(true);
    for (let i = 0; i < 5; i++) expect(a.admit(stream({ tenantId: 't', callerId: 'user:u', address: 'x' })).admitted).toBe(false);
    expect(a.size).toBe(1);
    a.release(held);
    a.release(held);
    expect([a.size, a.count('tenant', 't')]).toEqual([0, 0]);
    expect(a.admit(stream({ tenantId: 't', callerId: 'user:u', address: 'x' })).admitted).toBe(true);
    expect(a.size).toBe(1);
  });

  it('when full, refuses a free-plan stream and admits a paid one in place of the newest free-plan stream', () => {
    const a = admission(LIMITS);
    const free = Array.from({ length: 5 }, () => stream({ plan: 'free' }));
    const paid = Array.from({ length: 5 }, () => stream({ plan: 'standard' }));
    // Interleaved: the newest free-plan stream is not the newest stream.
    for (let i = 0; i < 5; i++) {
      expect(a.admit(free[i]!).admitted).toBe(true);
      expect(a.admit(paid[i]!).admitted).toBe(true);
    }
    expect(a.admit(stream({ plan: 'free' }))).toEqual({ admitted: false, bound: 'process', limit: 10 });
    const premium = stream({ plan: 'premium' });
    expect(a.admit(premium)).toEqual({ admitted: true, shed: free[4] });
    expect(a.admit(stream({ plan: 'standard' }))).toEqual({ admitted: true, shed: free[3] });
    expect(a.size).toBe(10);
    // The shed one no longer counts: its tenant may open again once there is room.
    expect(a.count('tenant', free[4]!.tenantId)).toBe(0);
    expect([...a.streams()]).not.toContain(free[4]);
  });

  it('a full process of paid-plan streams refuses every plan; a tenant whose plan changed is shed by its new plan', () => {
    const a = admission(LIMITS);
    const held = Array.from({ length: 10 }, () => stream({ plan: 'premium' }));
    for (const s of held) expect(a.admit(s).admitted).toBe(true);
    for (const plan of ['free', 'standard', 'premium'] as const) expect(a.admit(stream({ plan }))).toMatchObject({ admitted: false, bound: 'process' });
    // Downgraded to free while held (tenantChanged): now the one to shed.
    held[2]!.plan = 'free';
    expect(a.admit(stream({ plan: 'standard' }))).toEqual({ admitted: true, shed: held[2] });
  });
});
