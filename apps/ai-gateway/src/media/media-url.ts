import { isIP } from 'node:net';
import { isLoopbackAddress, isPublicAddress } from '@flagship/service-kit';

/**
 * The image URLs a request may carry (docs/decisions/2026-11-29-media-urls.md): `data:` URLs of an
 * image type, base64, at most `maxBytes` decoded; or https URLs without credentials, on the default
 * port, whose host is a name or a public address. Whether a name resolves to public addresses only is
 * checked when the gateway fetches it (MediaFetcher), on the addresses it then connects to.
 */
export interface MediaPolicy {
  /** The most bytes an image may have (a data: URL's decoded bytes; a fetched image's body). */
  maxBytes: number;
  /** Development and tests only (GATEWAY_MEDIA_ALLOW_LOOPBACK): loopback addresses and any port are accepted too. */
  allowLoopback: boolean;
}

/** The image types every provider the gateway serves reads (OpenAI's and Anthropic's four). */
export const IMAGE_MEDIA_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Longer https URLs than this are refused (a signed object-store URL is under 2 KiB). */
export const MAX_URL_LENGTH = 8192;

/** A media URL or image the gateway refuses; the message says why, to the client. */
export class MediaRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'MediaRefused';
  }
}

export type CheckedMediaUrl = { kind: 'data' } | { kind: 'remote'; url: URL };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const TYPES = [...IMAGE_MEDIA_TYPES].join(', ');

/** Whether the gateway may connect to `address` for an image. */
export function addressAllowed(address: string, policy: MediaPolicy): boolean {
  return isPublicAddress(address) || (policy.allowLoopback && isLoopbackAddress(address));
}

/** The decoded size of a base64 text of `length` characters ending in `padding` '=' signs. */
const decodedBytes = (length: number, padding: number): number => Math.floor((length * 3) / 4) - padding;

function checkDataUrl(raw: string, policy: MediaPolicy): CheckedMediaUrl {
  const comma = raw.indexOf(',');
  if (comma < 0) throw new MediaRefused('a data: URL needs its data after a comma (data:image/png;base64,...).');
  const [type = '', ...params] = raw.slice('data:'.length, comma).toLowerCase().split(';');
  if (!IMAGE_MEDIA_TYPES.has(type)) throw new MediaRefused(`a data: URL must hold an image of type ${TYPES}.`);
  if (params.length !== 1 || params[0] !== 'base64') throw new MediaRefused('a data: URL must be base64-encoded (data:image/png;base64,...).');
  const data = raw.slice(comma + 1);
  if (!BASE64.test(data)) throw new MediaRefused("a data: URL's data must be base64.");
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  if (decodedBytes(data.length, padding) > policy.maxBytes) throw new MediaRefused(`the image is larger than ${policy.maxBytes} bytes.`);
  return { kind: 'data' };
}

/**
 * The rule for an image URL, before any I/O: throws MediaRefused for one the gateway does not accept.
 * A host given as an address must be public (or loopback, when allowed); a name is resolved later.
 */
export function checkMediaUrl(raw: unknown, policy: MediaPolicy): CheckedMediaUrl {
  if (typeof raw !== 'string' || raw === '') throw new MediaRefused('the image URL must be a non-empty string.');
  if (/^data:/i.test(raw)) return checkDataUrl(raw, policy);
  if (raw.length > MAX_URL_LENGTH) throw new MediaRefused(`the image URL is longer than ${MAX_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new MediaRefused('the image URL is not a valid URL.');
  }
  if (url.protocol !== 'https:') throw new MediaRefused('only https: and data: image URLs are accepted.');
  if (url.username !== '' || url.password !== '') throw new MediaRefused('the image URL must not carry credentials (user:password@).');
  // The URL parser has normalised the host: 0x7f.1, 2130706433 and 127.1 are all 127.0.0.1 by now.
  if (url.port !== '' && !policy.allowLoopback) throw new MediaRefused('the image URL must use the default https port (443).');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0 && !addressAllowed(host, policy)) throw new MediaRefused('the image URL names a private or reserved address.');
  return { kind: 'remote', url };
}
