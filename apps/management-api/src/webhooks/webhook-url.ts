import { isIP } from 'node:net';
import { isPublicAddress } from '@flagship/service-kit';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Why a webhook URL is refused at write, or undefined when it is accepted. In production only https
 * URLs without credentials whose host is a name or a public address; `allowPrivate`
 * (WEBHOOKS_ALLOW_PRIVATE_URLS, development only) lets http and loopback or private hosts through.
 * A name's addresses are checked at each send, after DNS (the worker's WebhookSender).
 */
export function webhookUrlProblem(raw: string, allowPrivate: boolean): string | undefined {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return 'must be an https URL';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials (user:password@)';
  if (url.hash !== '') return 'must not have a fragment';
  if (allowPrivate) return undefined;
  // The parser has normalised the host already: 0x7f.1 and 2130706433 are 127.0.0.1 here.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) return isPublicAddress(host) ? undefined : 'names a loopback, private or reserved address';
  if (host === 'localhost' || host.endsWith('.localhost') || !host.includes('.')) return 'must name a public host';
  return undefined;
}
