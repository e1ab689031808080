import { waitFor } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

describe('approvals and scheduled changes (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let editor: SignedUp;
  let viewer: SignedUp;
  const as = (u: SignedUp, env = 'production') => ({ token: u.idToken, tenant: owner.tenantId, headers: { 'x-environment': env } });
  const flagPath = '/api/flags/checkout';

  beforeAll(async () => {
    // The executor polls often here so a schedule a second ahead runs within the test.
    f = await ManagementApiFixture.start({ SCHEDULED_CHANGES_POLL_MS: '100' });
    owner = await f.signUp();
    editor = await f.addMember(owner, owner.tenantId, `editor-${owner.email}`, 'editor');
    viewer = await f.addMember(owner, owner.tenantId, `viewer-${owner.email}`, 'viewer');
    const created = await f.call('POST', '/api/flags', { ...as(owner), json: { key: 'checkout', name: 'Checkout', type: 'boolean', defaultValue: false } });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('an admin makes production require approval; then a direct change to the flag there is 409 approval-required (problem+json), a rename is not', async () => {
    const hook = await f.call('POST', '/api/webhooks', { ...as(owner), json: { url: 'https://hooks.example.com/environments', events: ['environment.updated'] } });
    expect(hook.status).toBe(201);
    expect((await f.call('PATCH', '/api/environments/production', { ...as(editor), json: { requireApproval: true } })).status).toBe(403);
    const set = await f.call('PATCH', '/api/environments/production', { ...as(owner), json: { requireApproval: true } });
    expect([set.status, set.body]).toEqual([200, expect.objectContaining({ key: 'production', requireApproval: true })]);
    // Webhooks hear approvals turned on (queued in the change's transaction; no worker sends it here), not the refused attempt.
    const queued = await f.call('GET', `/api/webhooks/${hook.body.id}/deliveries`, as(owner));
    expect(queued.body.map((d: { type: string; payload: { data: unknown } }) => [d.type, d.payload.data])).toEqual([
      ['environment.updated', { environment: 'production', name: 'Production', requireApproval: true, action: 'update' }],
    ]);
    expect((await f.call('PATCH', '/api/environments/production', { ...as(owner), json: { requireApproval: 'yes' } })).status).toBe(422);
    expect((await f.call('PATCH', '/api/environments/nope', { ...as(owner), json: { requireApproval: true } })).status).toBe(404);
    const direct = await f.call('PATCH', flagPath, { ...as(editor), json: { enabled: true } });
    expect([direct.status, direct.headers.get('content-type'), direct.body.type]).toEqual([409, expect.stringContaining('application/problem+json'), '/problems/approval-required']);
    expect((await f.call('PATCH', flagPath, { ...as(editor), json: { name: 'Checkout v2' } })).status).toBe(200);
  });

  it('a change request: refused to its author (403 saying why) and to a viewer, approved by another editor, applied as its author', async () => {
    const made = await f.call('POST', `${flagPath}/change-requests`, { ...as(editor), json: { patch: { enabled: true }, comment: 'ship it' } });
    expect([made.status, made.body.state, made.body.author, made.body.comments.map((c: { body: string }) => c.body)]).toEqual([201, 'pending', `user:${editor.userId}`, ['ship it']]);
    const id = made.body.id as string;
    const own = await f.call('POST', `${flagPath}/change-requests/${id}/approve`, { ...as(editor), json: {} });
    expect([own.status, own.body.type, own.body.detail]).toEqual([403, '/problems/approval-not-allowed', 'The author of a change request cannot approve it: another member must.']);
    expect((await f.call('POST', `${flagPath}/change-requests/${id}/approve`, { ...as(viewer), json: {} })).status).toBe(403);
    const early = await f.call('POST', `${flagPath}/change-requests/${id}/apply`, as(owner));
    expect([early.status, early.body.type]).toEqual([409, '/problems/change-request-closed']);
    const approved = await f.call('POST', `${flagPath}/change-requests/${id}/approve`, { ...as(owner), json: { comment: 'ok' } });
    expect([approved.status, approved.body.state, approved.body.decidedBy]).toEqual([200, 'approved', `user:${owner.userId}`]);
    const applied = await f.call('POST', `${flagPath}/change-requests/${id}/apply`, as(owner));
    expect([applied.status, applied.body.state, applied.body.appliedBy]).toEqual([200, 'applied', `user:${owner.userId}`]);
    expect((await f.call('GET', flagPath, as(owner))).body.enabled).toBe(true);
    const audit = (await f.call('GET', `${flagPath}/audit`, as(owner))).body as Array<{ action: string; actor: string; changes: Record<string, unknown> }>;
    expect(audit.filter((a) => a.action === 'update' && 'enabled' in a.changes).map((a) => a.actor)).toEqual([`user:${editor.userId}`]);
    const listed = await f.call('GET', `${flagPath}/change-requests`, as(viewer));
    expect([listed.status, listed.body.map((r: { id: string }) => r.id)]).toEqual([200, [id]]);
    expect((await f.call('GET', `${flagPath}/change-requests/${id}`, as(viewer))).body.comments.map((c: { body: string }) => c.body)).toEqual(['ship it', 'ok']);
  });

  it('a stale approval is refused once the flag moved on (409 naming both versions), and the request reads stale', async () => {
    const made = await f.call('POST', `${flagPath}/change-requests`, { ...as(editor), json: { patch: { enabled: false } } });
    await f.call('PATCH', flagPath, { ...as(owner), json: { description: 'moved on' } });
    const stale = await f.call('POST', `${flagPath}/change-requests/${made.body.id}/approve`, { ...as(owner), json: {} });
    expect([stale.status, stale.body.type, stale.body.baseVersion, stale.body.currentVersion]).toEqual([409, '/problems/change-request-stale', made.body.baseVersion, expect.any(String)]);
    expect(stale.body.currentVersion).not.toBe(made.body.baseVersion);
    expect((await f.call('GET', `${flagPath}/change-requests/${made.body.id}`, as(owner))).body.state).toBe('stale');
    expect((await f.call('GET', flagPath, as(owner))).body.enabled).toBe(true);
  });

  it('bad input: a patch that is no PATCH body is 422 naming the field; an id that names nothing is 404; another tenant sees nothing', async () => {
    const noPatch = await f.call('POST', `${flagPath}/change-requests`, { ...as(editor), json: { comment: 'x' } });
    expect([noPatch.status, Object.keys(noPatch.body.errors ?? {})]).toEqual([422, ['patch']]);
    const badField = await f.call('POST', `${flagPath}/change-requests`, { ...as(editor), json: { patch: { name: '' } } });
    expect([badField.status, Object.keys(badField.body.errors ?? {})]).toEqual([422, ['patch.name']]);
    const longComment = await f.call('POST', `${flagPath}/change-requests`, { ...as(editor), json: { patch: { enabled: true }, comment: 'x'.repeat(2001) } });
    expect([longComment.status, Object.keys(longComment.body.errors ?? {})]).toEqual([422, ['comment']]);
    const badTime = await f.call('POST', `${flagPath}/scheduled-changes`, { ...as(editor, 'staging'), json: { patch: { enabled: true }, executeAt: 'tomorrow' } });
    expect([badTime.status, Object.keys(badTime.body.errors ?? {})]).toEqual([422, ['executeAt']]);
    expect((await f.call('GET', `${flagPath}/change-requests/not-a-uuid`, as(owner))).status).toBe(404);
    expect((await f.call('DELETE', `${flagPath}/scheduled-changes/00000000-0000-4000-8000-000000000000`, as(owner))).status).toBe(404);
    const stranger = await f.signUp();
    expect((await f.call('GET', `${flagPath}/change-requests`, { token: stranger.idToken, tenant: owner.tenantId })).status).toBe(403);
  });

  it('a scheduled change runs once at its time as its author; a cancelled one never runs; where approval is required it is 409', async () => {
    const executeAt = new Date(Date.now() + 1500).toISOString();
    const made = await f.call('POST', `${flagPath}/scheduled-changes`, { ...as(editor, 'staging'), json: { patch: { enabled: true }, executeAt } });
    expect([made.status, made.body.state, made.body.author]).toEqual([201, 'scheduled', `user:${editor.userId}`]);
    const other = await f.call('POST', `${flagPath}/scheduled-changes`, { ...as(editor, 'staging'), json: { patch: { offValue: true }, executeAt } });
    expect((await f.call('DELETE', `${flagPath}/scheduled-changes/${other.body.id}`, as(owner, 'staging'))).status).toBe(204);
    expect((await f.call('DELETE', `${flagPath}/scheduled-changes/${other.body.id}`, as(owner, 'staging'))).status).toBe(409);
    await waitFor(async () => (await f.call('GET', flagPath, as(owner, 'staging'))).body.enabled === true, 10_000);
    const listed = (await f.call('GET', `${flagPath}/scheduled-changes`, as(viewer, 'staging'))).body as Array<{ id: string; state: string }>;
    expect(Object.fromEntries(listed.map((s) => [s.id, s.state]))).toEqual({ [made.body.id]: 'applied', [other.body.id]: 'cancelled' });
    expect((await f.call('GET', flagPath, as(owner, 'staging'))).body.offValue ?? null).toBeNull();
    const gated = await f.call('POST', `${flagPath}/scheduled-changes`, { ...as(editor), json: { patch: { enabled: false }, executeAt: new Date(Date.now() + 60_000).toISOString() } });
    expect([gated.status, gated.body.type]).toEqual([409, '/problems/approval-required']);
  });
});
