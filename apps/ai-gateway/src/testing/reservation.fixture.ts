import { randomUUID } from 'node:crypto';
import type { Reservation } from '../pipeline/ledger.types';

/**
 * A billable chat completion's reservation for tenant `t-1`, priced so that a cost reads off the
 * tokens (input x 1 + output x 2 micro-credits); `over` changes any field.
 */
export const aReservation = (over: Partial<Reservation> = {}): Reservation => ({
  id: randomUUID(),
  tenantId: 't-1',
  clientId: 'client-1',
  productKey: 'core',
  provider: 'inhouse',
  model: 'fake-chat-1',
  endpoint: 'chat.completions',
  stream: false,
  estimate: 1000,
  zeroRatedReason: null,
  requestId: 'r-1',
  inputPer1k: 1000,
  outputPer1k: 2000,
  cachedInputPer1k: null,
  ...over,
});
