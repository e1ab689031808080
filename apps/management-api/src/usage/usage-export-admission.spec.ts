import { ProblemException } from '@flagship/problem-details';
import { type RunningExport, UsageExportAdmission } from './usage-export-admission';

const refusal = (admission: UsageExportAdmission, e: RunningExport) => {
  try {
    admission.admit(e);
  } catch (err) {
    const p = err as ProblemException;
    return { status: p.getStatus(), slug: p.problem.slug, per: p.extensions['per'], retryAfter: p.headers['Retry-After'] };
  }
  return undefined;
};

describe('UsageExportAdmission', () => {
  const limits = { perTenant: 2, perCaller: 3, perProcess: 5 };

  it("refuses a tenant's export past its bound with a 429 naming it, and admits it again once one is released", () => {
    const admission = new UsageExportAdmission(limits);
    const a1 = { tenantId: 't1', callerId: 'user:a' };
    const a2 = { tenantId: 't1', callerId: 'client:b' };
    admission.admit(a1);
    admission.admit(a2);
    expect(refusal(admission, { tenantId: 't1', callerId: 'client:c' })).toEqual({ status: 429, slug: 'too-many-exports', per: 'tenant', retryAfter: '30' });
    // Another tenant is not held back by t1's exports.
    expect(refusal(admission, { tenantId: 't2', callerId: 'user:z' })).toBeUndefined();
    admission.release(a1);
    expect(refusal(admission, { tenantId: 't1', callerId: 'client:c' })).toBeUndefined();
  });

  it('bounds one caller across the tenants it creates, since tenants are free', () => {
    const admission = new UsageExportAdmission(limits);
    for (const t of ['t1', 't2', 't3']) admission.admit({ tenantId: t, callerId: 'user:hoarder' });
    expect(refusal(admission, { tenantId: 't4', callerId: 'user:hoarder' })).toMatchObject({ status: 429, per: 'caller' });
    expect(refusal(admission, { tenantId: 't4', callerId: 'user:someone-else' })).toBeUndefined();
  });

  it('answers 503 with Retry-After when the process runs as many as it may, and counts a release once', () => {
    const admission = new UsageExportAdmission(limits);
    const held = ['t1', 't2', 't3', 't4', 't5'].map((t) => ({ tenantId: t, callerId: `user:${t}` }));
    for (const e of held) admission.admit(e);
    expect(refusal(admission, { tenantId: 't6', callerId: 'user:t6' })).toEqual({ status: 503, slug: 'exports-full', per: undefined, retryAfter: '30' });
    admission.release(held[0]!);
    admission.release(held[0]!);
    expect(admission.running).toBe(4);
    admission.admit({ tenantId: 't6', callerId: 'user:t6' });
    expect(refusal(admission, { tenantId: 't7', callerId: 'user:t7' })).toMatchObject({ status: 503 });
  });
});
