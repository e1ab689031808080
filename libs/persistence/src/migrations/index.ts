import { Init1763800000000 } from './1763800000000-init';
import { IdentityAndFlags1763800100000 } from './1763800100000-identity-and-flags';
import { UsageLedger1763800200000 } from './1763800200000-usage-ledger';
import { Billing1763800300000 } from './1763800300000-billing';
import { UsageSubscriptions1763800400000 } from './1763800400000-usage-subscriptions';
import { UsageLedgerCompletedIffSettled1763800500000 } from './1763800500000-usage-ledger-completed-iff-settled';
import { DevIdpEmailVerified1763800660000 } from './1763800660000-dev-idp-email-verified';
import { Invitations1763800670000 } from './1763800670000-invitations';
import { OAuthClientsAiInvoke1763810000000 } from './1763810000000-oauth-clients-ai-invoke';
import { CheckoutSessions1763810100000 } from './1763810100000-checkout-sessions';
import { ClauseContextKinds1763820000000 } from './1763820000000-clause-context-kinds';
import { UsageLedgerPrices1763820100000 } from './1763820100000-usage-ledger-prices';
import { LowBalanceAlerts1763830300000 } from './1763830300000-low-balance-alerts';
import { Budgets1763840000000 } from './1763840000000-budgets';
import { UsageLedgerUpstreamCalled1763840100000 } from './1763840100000-usage-ledger-upstream-called';
import { LedgerFlushBarriers1763840200000 } from './1763840200000-ledger-flush-barriers';
import { UsageLedgerAgentEndpoints1763850000000 } from './1763850000000-usage-ledger-agent-endpoints';
import { FlagDefinitionBytes1763860000000 } from './1763860000000-flag-definition-bytes';
import { UsageLedgerOverrunClientRequestId1763860300000 } from './1763860300000-usage-ledger-overrun-client-request-id';
import { FlagClientSideAvailability1763860400000 } from './1763860400000-flag-client-side-availability';
import { TenantsCreatedBy1763860500000 } from './1763860500000-tenants-created-by';
import { InvitationsExpire1763860510000 } from './1763860510000-invitations-expire';
import { CreditPurchases1763860520000 } from './1763860520000-credit-purchases';
import { Segments1763870000000 } from './1763870000000-segments';
import { FlagChanges1763880000000 } from './1763880000000-flag-changes';
import { Webhooks1763885000000 } from './1763885000000-webhooks';
import { FlagLifecycle1763890000000 } from './1763890000000-flag-lifecycle';
import { ModelBindings1763895000000 } from './1763895000000-model-bindings';
import { UsageRollups1763900000000 } from './1763900000000-usage-rollups';
import { UsageLedgerListingIndexes1763900000001 } from './1763900000001-usage-ledger-listing-indexes';
import { UsageLedgerPartitions1763905000000 } from './1763905000000-usage-ledger-partitions';
import { ModelBindingRoutes1763910000000 } from './1763910000000-model-binding-routes';
import { ModelRollouts1763915000000 } from './1763915000000-model-rollouts';

/** Every migration, in order. Listed by hand (not globbed) so builds and tests load the same set. */
export const MIGRATIONS = [
  Init1763800000000,
  IdentityAndFlags1763800100000,
  UsageLedger1763800200000,
  Billing1763800300000,
  UsageSubscriptions1763800400000,
  UsageLedgerCompletedIffSettled1763800500000,
  DevIdpEmailVerified1763800660000,
  Invitations1763800670000,
  OAuthClientsAiInvoke1763810000000,
  CheckoutSessions1763810100000,
  ClauseContextKinds1763820000000,
  UsageLedgerPrices1763820100000,
  LowBalanceAlerts1763830300000,
  Budgets1763840000000,
  UsageLedgerUpstreamCalled1763840100000,
  LedgerFlushBarriers1763840200000,
  UsageLedgerAgentEndpoints1763850000000,
  FlagDefinitionBytes1763860000000,
  UsageLedgerOverrunClientRequestId1763860300000,
  FlagClientSideAvailability1763860400000,
  TenantsCreatedBy1763860500000,
  InvitationsExpire1763860510000,
  CreditPurchases1763860520000,
  Segments1763870000000,
  FlagChanges1763880000000,
  Webhooks1763885000000,
  FlagLifecycle1763890000000,
  ModelBindings1763895000000,
  UsageRollups1763900000000,
  UsageLedgerListingIndexes1763900000001,
  UsageLedgerPartitions1763905000000,
  ModelBindingRoutes1763910000000,
  ModelRollouts1763915000000,
];
