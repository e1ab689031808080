import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { renderSignedIn, routeServer, type Sent } from '../testing';
import { Tour, TOUR_STEPS } from './Tour';

const TOUR = '/v1/users/me/product-tours/console-intro';
const status = (completed: boolean) => ({ completed, completed_at: completed ? '2026-11-23T00:00:00.000Z' : null, created_at: '2026-11-22T00:00:00.000Z', updated_at: '2026-11-22T00:00:00.000Z' });

/** The product-tours endpoint with one user's state, as the API keeps it. */
function tourServer(completed: boolean) {
  const state = { completed };
  const sent = routeServer((req: Sent) => {
    if (req.url !== TOUR) return undefined;
    if (req.method === 'PUT') state.completed = (req.body as { completed: boolean }).completed;
    return { status: 200, body: status(state.completed) };
  });
  return { sent, state };
}

describe('first-run tour', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('walks through every step and records completion with PUT, then is gone', async () => {
    const { sent, state } = tourServer(false);
    renderSignedIn(<Tour />);
    const tour = await screen.findByRole('complementary', { name: TOUR_STEPS[0].title });
    expect(tour).toHaveTextContent(`step 1 of ${TOUR_STEPS.length}`);
    for (let i = 1; i < TOUR_STEPS.length; i++) {
      await userEvent.click(screen.getByRole('button', { name: 'Next' }));
      expect(screen.getByRole('complementary', { name: TOUR_STEPS[i]?.title })).toBeInTheDocument();
    }
    await userEvent.click(screen.getByRole('button', { name: 'Back' }));
    expect(screen.getByRole('complementary', { name: TOUR_STEPS[TOUR_STEPS.length - 2]?.title })).toBeInTheDocument();
    await userEvent.click(screen.getByRole('button', { name: 'Next' }));
    expect(sent.filter((r) => r.method === 'PUT')).toEqual([]);
    await userEvent.click(screen.getByRole('button', { name: 'Finish tour' }));
    await waitFor(() => expect(screen.queryByRole('complementary')).toBeNull());
    expect(sent.filter((r) => r.method === 'PUT')).toEqual([expect.objectContaining({ url: TOUR, body: { completed: true }, headers: expect.objectContaining({ 'X-Tenant-ID': 't-1' }) })]);
    expect(state.completed).toBe(true);
  });

  it('skipping records completion too, and a completed tour is not shown again', async () => {
    const { sent } = tourServer(false);
    const first = renderSignedIn(<Tour />);
    await userEvent.click(await screen.findByRole('button', { name: 'Skip tour' }));
    await waitFor(() => expect(screen.queryByRole('complementary')).toBeNull());
    expect(sent.filter((r) => r.method === 'PUT')).toHaveLength(1);
    first.unmount();

    // The next visit (a new page load: a fresh query client) reads the stored state and shows nothing.
    renderSignedIn(<Tour />);
    await waitFor(() => expect(sent.filter((r) => r.method === 'GET')).toHaveLength(2));
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.queryByRole('complementary')).toBeNull();
  });
});
