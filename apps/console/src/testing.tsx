// Test helpers for the component tests: a QueryClient as the app makes it, and a scripted server at
// the fetch boundary that records what the console sent (the e2e test runs the real API).
import { QueryClientProvider } from '@tanstack/react-query';
import { render } from '@testing-library/react';
import type { ReactElement } from 'react';
import { vi } from 'vitest';
import type { Flag } from './api';
import { createQueryClient } from './App';

export interface Sent { method: string; url: string; headers: Record<string, string>; body: unknown }

/** Answers each request with the next scripted response and records the request. */
export function scriptServer(responses: { status: number; body: unknown; headers?: Record<string, string> }[]) {
  const sent: Sent[] = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    sent.push({ method: init.method ?? 'GET', url, headers: (init.headers ?? {}) as Record<string, string>, body: init.body ? JSON.parse(String(init.body)) : undefined });
    const next = responses.shift();
    if (!next) throw new Error(`unexpected request ${init.method} ${url}`);
    const problem = next.status >= 400;
    return new Response(JSON.stringify(next.body), {
      status: next.status,
      headers: { 'Content-Type': problem ? 'application/problem+json' : 'application/json', ...next.headers },
    });
  });
  return sent;
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
    environment: 'staging',
    offValue: false,
    targets: [],
    rules: [],
    prerequisites: [],
    version: '3.4',
    warnings: [],
    salt: null,
    createdAt: '2026-11-22T10:00:00.000Z',
    updatedAt: '2026-11-22T10:00:00.000Z',
    ...over,
  };
}
