// Test helpers for the component tests: a QueryClient as the app makes it, and a scripted server at
// the fetch boundary that records what the console sent (the e2e test runs the real API).
import { QueryClientProvider } from '@tanstack/react-query';
import { render } from '@testing-library/react';
import type { ReactElement } from 'react';
import { vi } from 'vitest';
import type { ChangeRequest } from '@flagship/sdk';
import type { Flag } from './api';
import { createQueryClient } from './App';
import { SessionProvider } from './session';
import type { Webhook } from './tenant-queries';

export interface Sent { method: string; url: string; headers: Record<string, string>; body: unknown; cache?: RequestCache }

/** Answers each request with the next scripted response and records the request. */
export function scriptServer(responses: Answer[]) {
  return routeServer(() => responses.shift());
}

export function renderWithQueries(ui: ReactElement, onUnauthorized = () => {}) {
  const client = createQueryClient(onUnauthorized);
  return render(<QueryClientProvider client={client}>{ui}</QueryClientProvider>);
}

export function aFlag(over: Partial<Flag> = {}): Flag {
  return {
    id: 'f1',
    key: 'new-checkout',
    name: 'New checkout',
    type: 'boolean',
    enabled: false,
    defaultValue: false,
    description: '',
    tags: [],
    projectId: null,
    variations: [
      { id: 'v-true', name: 'true', value: true, description: '', weight: 0 },
      { id: 'v-false', name: 'false', value: false, description: '', weight: 0 },
    ],
    clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false },
    environment: 'staging',
    offValue: false,
    targets: [],
    rules: [],
    prerequisites: [],
    version: '3.4',
    warnings: [],
    salt: null,
    lastEvaluatedAt: null,
    servingOneVariationSince: null,
    createdAt: '2026-11-22T10:00:00.000Z',
    updatedAt: '2026-11-22T10:00:00.000Z',
    ...over,
  };
}

/** `text`: a body sent as it is (a CSV download), instead of `body` as JSON. */
export interface Answer { status: number; body: unknown; headers?: Record<string, string>; text?: string }

/** Answers each request by what it asks for (for screens whose queries run in parallel) and records it. */
export function routeServer(answer: (req: Sent) => Answer | undefined) {
  const sent: Sent[] = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    const req: Sent = { method: init.method ?? 'GET', url, headers: (init.headers ?? {}) as Record<string, string>, body: init.body ? JSON.parse(String(init.body)) : undefined, cache: init.cache };
    sent.push(req);
    const a = answer(req);
    if (!a) throw new Error(`unexpected request ${req.method} ${url}`);
    return new Response(a.status === 204 ? null : (a.text ?? JSON.stringify(a.body)), {
      status: a.status,
      headers: { 'Content-Type': a.status >= 400 ? 'application/problem+json' : 'application/json', ...a.headers },
    });
  });
  return sent;
}

export const SIGNED_IN = {
  token: 'id-token',
  email: 'ada@flagship.test',
  tenants: [{ tenant_id: 't-1', tenant_name: 'Ada', role: 'admin' }],
  tenantId: 't-1',
  environment: 'production',
};

/** A screen behind sign-in, with the app's query client and a session. */
export function renderSignedIn(ui: ReactElement, onUnauthorized = () => {}) {
  return renderWithQueries(<SessionProvider initial={SIGNED_IN}>{ui}</SessionProvider>, onUnauthorized);
}

/** A screen behind sign-in as a member with the given id and role (who may approve what depends on both). */
export function renderAsMember(ui: ReactElement, { userId = 'u-ada', role = 'editor' }: { userId?: string; role?: string } = {}) {
  return renderWithQueries(<SessionProvider initial={{ ...SIGNED_IN, userId, tenants: [{ ...SIGNED_IN.tenants[0]!, role }] }}>{ui}</SessionProvider>);
}

/** The tenant's members as the API lists them, so authors read as e-mails. */
export const MEMBERS = [
  { userId: 'u-ada', email: 'ada@flagship.test', displayName: 'Ada', role: 'editor', status: 'active', lastAccessedAt: null, createdAt: '2026-11-01T00:00:00.000Z' },
  { userId: 'u-grace', email: 'grace@flagship.test', displayName: 'Grace', role: 'admin', status: 'active', lastAccessedAt: null, createdAt: '2026-11-01T00:00:00.000Z' },
];

/** A change request of new-checkout in production, pending, by Grace. */
export const aRequest = (over: Partial<ChangeRequest> = {}): ChangeRequest => ({
  id: 'cr-1',
  flagKey: 'new-checkout',
  environment: 'production',
  patch: { name: 'Checkout v2' },
  baseVersion: '"3.4"',
  executeAt: null,
  state: 'pending',
  author: 'user:u-grace',
  createdAt: '2026-11-28T10:00:00.000Z',
  comments: [{ author: 'user:u-grace', body: 'Rename for the launch', at: '2026-11-28T10:00:00.000Z' }],
  decidedBy: null,
  decidedAt: null,
  appliedBy: null,
  appliedAt: null,
  ...over,
});

/** A webhook as GET /api/webhooks lists it (enabled), with `over` replacing fields. */
export function aWebhook(over: Partial<Webhook> = {}): Webhook {
  return {
    id: 'wh-1',
    url: 'https://hooks.example.com/flagship',
    description: 'Deploy bot',
    events: ['flag.created', 'flag.updated', 'flag.deleted'],
    enabled: true,
    disabledAt: null,
    disabledReason: null,
    droppedEvents: 0,
    createdBy: 'u-1',
    createdAt: '2026-11-28T10:00:00.000Z',
    ...over,
  };
}
