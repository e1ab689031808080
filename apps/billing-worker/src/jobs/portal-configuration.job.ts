import type { BillingWorkerConfig } from '../env.schema';
import type { PortalConfigurationService } from '../stripe/portal-configuration.service';
import type { Job } from './job';

/** At start-up and daily: the portal configuration allows every plan price. */
export function portalConfigurationJob(portal: PortalConfigurationService, config: BillingWorkerConfig): Job {
  return { name: 'portal-configuration', intervalMs: config.PORTAL_CONFIGURATION_INTERVAL_S * 1000, run: async () => (await portal.ensure(), false) };
}
