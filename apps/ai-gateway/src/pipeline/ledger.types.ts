import type { Reservation as LedgerReservation, Settlement as LedgerSettlement } from '@flagship/ledger';
import type { Endpoint, ProviderKey } from '../providers/provider.types';

/** A ledger reservation as the gateway makes it: provider and endpoint are the gateway's own keys. */
export type Reservation = LedgerReservation<ProviderKey, Endpoint>;
export type Settlement = LedgerSettlement<ProviderKey>;
