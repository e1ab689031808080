import type { Reservation as LedgerReservation, Settlement as LedgerSettlement } from '@flagship/ledger';
import type { GatewayRoute } from '../dialects/dialects';
import type { ProviderKey } from '../providers/provider.types';

/** A ledger reservation as the gateway makes it: provider and endpoint are the gateway's own keys (the endpoint: the route asked, `messages` and `responses` included). */
export type Reservation = LedgerReservation<ProviderKey, GatewayRoute>;
export type Settlement = LedgerSettlement<ProviderKey>;
