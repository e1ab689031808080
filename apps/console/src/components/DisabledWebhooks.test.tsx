import { screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useSignedIn } from '../session';
import { useWebhooks, type Webhook } from '../tenant-queries';
import { aWebhook, renderSignedIn, routeServer } from '../testing';
import { DisabledWebhooksBanner } from './DisabledWebhooks';

const down = (id: string, url: string): Webhook => aWebhook({ id, url, enabled: false, disabledAt: '2026-11-29T10:00:00.000Z', disabledReason: 'every delivery failed since ...' });

/** The tenant's webhooks as GET /api/webhooks lists them; returns what was asked. */
function webhooksServer(hooks: Webhook[]) {
  return routeServer((req) => (req.method === 'GET' && req.url === '/api/webhooks?limit=1000' ? { status: 200, body: hooks } : undefined));
}

/** Says when the list has arrived (the banner reads the same query), so an absent banner is not merely a pending one. */
function Loaded() {
  const { scope } = useSignedIn();
  const q = useWebhooks(scope, true);
  return q.data ? <output aria-label="Webhooks loaded">{q.data.length}</output> : null;
}

describe('DisabledWebhooksBanner', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('tells the admin which webhook billing-worker disabled, and where to fix it', async () => {
    webhooksServer([aWebhook(), down('wh-2', 'https://down.example.com/in')]);
    renderSignedIn(<DisabledWebhooksBanner />);
    const banner = await screen.findByRole('region', { name: 'Disabled webhooks' });
    expect(banner).toHaveTextContent('The webhook to https://down.example.com/in was disabled after every delivery failed for a day: nothing is sent to it any more.');
    expect(screen.getByRole('link', { name: 'Webhooks' })).toHaveAttribute('href', '/webhooks');
  });

  it('counts several, and says nothing while every webhook is enabled', async () => {
    webhooksServer([down('wh-2', 'https://a.example.com/in'), down('wh-3', 'https://b.example.com/in')]);
    const { unmount } = renderSignedIn(<DisabledWebhooksBanner />);
    expect(await screen.findByRole('region', { name: 'Disabled webhooks' })).toHaveTextContent('2 webhooks were disabled');
    unmount();
    vi.unstubAllGlobals();
    webhooksServer([aWebhook()]);
    renderSignedIn(
      <>
        <DisabledWebhooksBanner />
        <Loaded />
      </>,
    );
    expect(await screen.findByRole('status', { name: 'Webhooks loaded' })).toHaveTextContent('1');
    expect(screen.queryByRole('region', { name: 'Disabled webhooks' })).toBeNull();
  });
});
