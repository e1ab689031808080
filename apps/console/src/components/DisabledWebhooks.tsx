import { Link } from 'wouter';
import { useSignedIn } from '../session';
import { useWebhooks } from '../tenant-queries';

/**
 * Shown to a tenant admin on every screen while billing-worker has disabled a webhook (every delivery
 * failed for a day): the tenant is told where it looks anyway, not left to find it in the webhooks
 * list. Only billing-worker disables one (the API has no switch), so `enabled: false` means that.
 */
export function DisabledWebhooksBanner() {
  const { scope } = useSignedIn();
  const disabled = (useWebhooks(scope, true).data ?? []).filter((w) => !w.enabled);
  if (disabled.length === 0) return null;
  const what = disabled.length === 1 ? `The webhook to ${disabled[0]!.url} was disabled` : `${disabled.length} webhooks were disabled`;
  return (
    <div className="banner expired" role="region" aria-label="Disabled webhooks">
      <strong>{what}</strong> after every delivery failed for a day: nothing is sent to {disabled.length === 1 ? 'it' : 'them'} any more. Once the
      receiver works, delete it and add it again on the <Link href="/webhooks">Webhooks</Link> page.
    </div>
  );
}
