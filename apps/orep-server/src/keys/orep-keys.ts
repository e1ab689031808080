import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientSideKeyKind, CompiledFlag } from '@flagship/flag-evaluation';
import { ApiKeys } from '@flagship/lean-http';

/**
 * Who a request is: the server token (OREP_AUTH_TOKEN: every flag), or a client-side key that may
 * be public, a browser key (OREP_CLIENT_KEYS: flags with `usingEnvironmentId`) or a mobile key
 * (OREP_MOBILE_KEYS: flags with `usingMobileKey`).
 */
export interface Caller {
  readonly kind: 'server' | ClientSideKeyKind;
  /** Names the key without telling it (a digest prefix), so SSE tokens and streams can be tied to it. */
  readonly keyId: string;
}

export const SERVER: Caller = Object.freeze({ kind: 'server', keyId: 'server' });

/** A client-side key sees the flags marked for its kind, and no others: for it they do not exist. */
export function visibleTo(flag: CompiledFlag, caller: Caller): boolean {
  return caller.kind === 'server' || flag.clientSide[caller.kind];
}

/** The client-side keys, by kind: what OREP_CLIENT_KEYS and OREP_MOBILE_KEYS hold. */
export interface ClientKeyLists {
  usingEnvironmentId: readonly string[];
  usingMobileKey: readonly string[];
}

export const KEY_LIST_NAMES: Record<ClientSideKeyKind, string> = { usingEnvironmentId: 'OREP_CLIENT_KEYS', usingMobileKey: 'OREP_MOBILE_KEYS' };

/** A list holds at most this many keys: old and new during a rotation, with room to spare. */
export const MAX_KEYS_PER_LIST = 16;
/** Printable ASCII but commas and spaces (the separators), 16 to 256 characters: guessable keys are refused. */
const KEY = /^[\x21-\x2b\x2d-\x7e]{16,256}$/;

/** A key list that cannot be used; the message names the variable and the position, never a key. */
export class KeyListError extends Error {
  override readonly name = 'KeyListError';
}

/** A list as the variable holds it: keys separated by commas and/or whitespace; '' is no key. */
export function parseKeyList(value: string | undefined): string[] {
  const keys = (value ?? '').split(/[\s,]+/).filter((k) => k !== '');
  keys.forEach((key, i) => {
    if (!KEY.test(key)) throw new KeyListError(`key ${i + 1} must be 16 to 256 printable ASCII characters, without commas or spaces`);
  });
  const unique = [...new Set(keys)];
  if (unique.length > MAX_KEYS_PER_LIST) throw new KeyListError(`at most ${MAX_KEYS_PER_LIST} keys`);
  return unique;
}

/** Both lists from where the app reads secrets (the environment, or a Secrets Manager secret); a bad one throws naming it. */
export function readKeyLists(read: (name: string) => string | undefined): ClientKeyLists {
  const out = { usingEnvironmentId: [] as string[], usingMobileKey: [] as string[] };
  for (const kind of ['usingEnvironmentId', 'usingMobileKey'] as const) {
    try {
      out[kind] = parseKeyList(read(KEY_LIST_NAMES[kind]));
    } catch (err) {
      throw new KeyListError(`${KEY_LIST_NAMES[kind]}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return out;
}

const keyIdOf = (key: string): string => createHash('sha256').update(key).digest('base64url').slice(0, 16);

/**
 * The server token and the client-side keys in force, compared in constant time (ApiKeys). The
 * client-side lists can be replaced while serving (a rotation read from the secret store): a key that
 * leaves is refused from then on, and `onRevoked` listeners hear its id, so what it opened can end.
 */
export class OrepKeys {
  private keys: ApiKeys<Caller>;
  private byId = new Map<string, Caller>();
  private readonly revokedListeners = new Set<(keyIds: ReadonlySet<string>) => void>();

  constructor(
    private readonly serverToken: string,
    lists: ClientKeyLists = { usingEnvironmentId: [], usingMobileKey: [] },
  ) {
    this.keys = this.build(lists);
  }

  /** Who presents the request's key; 'missing' without one, 'invalid' when it is none in force. */
  identify(headers: IncomingHttpHeaders): Caller | 'missing' | 'invalid' {
    return this.keys.check(headers);
  }

  /** The caller of a key id still in force (a stream's or an SSE token's), else undefined. */
  callerOf(keyId: string): Caller | undefined {
    return this.byId.get(keyId);
  }

  /** How many client-side keys of each kind are in force (for logs: never the keys). */
  counts(): Record<ClientSideKeyKind, number> {
    const out = { usingEnvironmentId: 0, usingMobileKey: 0 };
    for (const caller of this.byId.values()) if (caller.kind !== 'server') out[caller.kind]++;
    return out;
  }

  /** Puts new client-side lists in force (or throws KeyListError and keeps the old ones); tells who left. */
  replace(lists: ClientKeyLists): void {
    const before = this.byId;
    this.keys = this.build(lists);
    const revoked = new Set([...before.keys()].filter((id) => !this.byId.has(id)));
    if (revoked.size > 0) for (const listener of this.revokedListeners) listener(revoked);
  }

  onRevoked(listener: (keyIds: ReadonlySet<string>) => void): () => void {
    this.revokedListeners.add(listener);
    return () => this.revokedListeners.delete(listener);
  }

  private build(lists: ClientKeyLists): ApiKeys<Caller> {
    const entries: Array<[string, Caller]> = [[this.serverToken, SERVER]];
    const byId = new Map<string, Caller>([[SERVER.keyId, SERVER]]);
    const kindOf = new Map<string, ClientSideKeyKind>();
    for (const kind of ['usingEnvironmentId', 'usingMobileKey'] as const) {
      for (const key of lists[kind]) {
        // The server token handed to browsers as a "client key" would evaluate every flag for them.
        if (key === this.serverToken) throw new KeyListError(`${KEY_LIST_NAMES[kind]}: a key equals OREP_AUTH_TOKEN; client-side keys must differ from the server token`);
        const other = kindOf.get(key);
        if (other !== undefined && other !== kind) throw new KeyListError(`${KEY_LIST_NAMES[kind]}: a key is also in ${KEY_LIST_NAMES[other]}; a key has one kind`);
        kindOf.set(key, kind);
        const caller: Caller = Object.freeze({ kind, keyId: keyIdOf(key) });
        entries.push([key, caller]);
        byId.set(caller.keyId, caller);
      }
    }
    const keys = new ApiKeys(entries);
    this.byId = byId;
    return keys;
  }
}
