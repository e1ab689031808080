import { Inject, Injectable, Optional } from '@nestjs/common';
import { isScope, type OAuthClient, type OAuthClientWithSecret, SCOPES } from '@flagship/domain';
import { hashSecret, REVOCATION_RECORDER, type RevocationRecorder, RevocationUnavailableError } from '@flagship/oauth';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { decodeCursor, type PageCursor } from '@flagship/service-kit';
import { newClientId, newClientSecret } from './client-credentials';
import type { OAuthClientEntity } from './oauth-client.entity';
import { OAuthClientProblems } from './oauth-clients.errors';
import { isClientId, OAuthClientsRepository } from './oauth-clients.repository';
import { OAUTH_FEATURE_OPTIONS, type ResolvedOAuthFeatureOptions } from './oauth-feature.options';
import { Quotas } from '../quotas/quotas';

/** The API's view of a client (libs/domain, shared with the console). */
export type OAuthClientView = OAuthClient;
export type { OAuthClientWithSecret };

export interface CreateOAuthClientInput {
  name: string;
  scopes: string[];
  productKeys?: string[];
}

export function toOAuthClientView(c: OAuthClientEntity): OAuthClientView {
  return {
    clientId: c.clientId,
    name: c.name,
    scopes: [...c.scopes],
    productKeys: [...c.productKeys],
    createdAt: c.createdAt.toISOString(),
    createdBy: c.createdBy,
    secretRotatedAt: c.secretRotatedAt?.toISOString() ?? null,
  };
}

/** The keyset position of a listed client, for `sendPage`. */
export const oauthClientCursor = (c: OAuthClientView): PageCursor => ({ at: c.createdAt, id: c.clientId });

const unique = (values: readonly string[]): string[] => [...new Set(values)];

/** A date at millisecond precision: what a cursor carries, so keyset comparisons are exact. */
const nowMs = (): Date => new Date(Date.now());

/**
 * OAuth clients of a tenant (CONTRACT.md section 3). Callers (OAuthClientsController) have already
 * authenticated the actor and resolved the tenant; this owns the rules: known scopes, who may allow
 * which product keys, secrets shown once and stored as scrypt hashes, deletion that revokes tokens.
 */
@Injectable()
export class OAuthClientsService {
  constructor(
    private readonly clients: OAuthClientsRepository,
    @Inject(REVOCATION_RECORDER) private readonly revocations: RevocationRecorder,
    @Inject(OAUTH_FEATURE_OPTIONS) private readonly options: ResolvedOAuthFeatureOptions,
    // Optional: the OAuth feature also runs without the app's quotas (its own tests, the fakes).
    @Optional() private readonly quotas?: Quotas,
  ) {}

  async create(
    tenantId: string,
    actorUserId: string | null,
    input: CreateOAuthClientInput,
    actorIsPlatformAdmin: boolean,
  ): Promise<OAuthClientWithSecret> {
    const name = input.name.trim();
    const scopes = unique(input.scopes);
    const productKeys = unique(input.productKeys ?? []);
    this.checkFields(name, scopes, productKeys, actorIsPlatformAdmin);
    const clientSecret = newClientSecret();
    const client: OAuthClientEntity = {
      tenantId,
      clientId: newClientId(),
      name,
      secretHash: await hashSecret(clientSecret, this.options.secretHashCost),
      scopes,
      productKeys,
      createdBy: actorUserId,
      createdAt: nowMs(),
      secretRotatedAt: null,
      deletedAt: null,
    };
    await this.insertWithinQuota(client);
    return { ...toOAuthClientView(client), clientSecret };
  }

  /** Within the tenant's quota of clients (QUOTA_OAUTH_CLIENTS_PER_TENANT), counted under a lock so concurrent creates cannot pass it. */
  private async insertWithinQuota(client: OAuthClientEntity): Promise<void> {
    if (this.quotas) await this.quotas.within('oauth-clients-per-tenant', client.tenantId, (m) => this.clients.insert(client, m));
    else await this.clients.insert(client);
  }

  /** Up to `limit + 1` clients (one more tells the controller a next page exists), never a secret. */
  async list(tenantId: string, page: { limit: number; cursor?: string }): Promise<OAuthClientView[]> {
    const after = decodeCursor(page.cursor, isClientId);
    return (await this.clients.list(tenantId, page.limit, after)).map(toOAuthClientView);
  }

  /**
   * Deletes the client and revokes its tokens in every app. The revocation is recorded first: when
   * Redis cannot take it the answer is 503 and nothing changed, so a deletion never succeeds while
   * its tokens would stay valid for up to an hour.
   */
  async delete(tenantId: string, clientId: string): Promise<void> {
    const client = await this.clients.findActive(tenantId, clientId);
    if (!client) throw notFound(clientId);
    try {
      await this.revocations.revoke(client.clientId);
    } catch (err) {
      if (err instanceof RevocationUnavailableError) {
        throw new ProblemException(
          OAuthClientProblems['revocation-unavailable'],
          'The client was not deleted: its tokens could not be revoked right now. Retry shortly.',
          {},
          { 'Retry-After': '5' },
        );
      }
      throw err;
    }
    // A concurrent delete may have won the race: the client is gone either way.
    await this.clients.markDeleted(tenantId, client.clientId, nowMs());
  }

  /** Whether the tenant has this client, not deleted (another tenant's client is not its own: false). */
  async isActive(tenantId: string, clientId: string): Promise<boolean> {
    return (await this.clients.findActive(tenantId, clientId)) !== null;
  }

  /** A new secret, shown once; the old one stops working at once. Tokens already issued stay valid until they expire. */
  async rotateSecret(tenantId: string, clientId: string): Promise<OAuthClientWithSecret> {
    const clientSecret = newClientSecret();
    const updated = await this.clients.replaceSecret(tenantId, clientId, await hashSecret(clientSecret, this.options.secretHashCost), nowMs());
    if (!updated) throw notFound(clientId);
    return { ...toOAuthClientView(updated), clientSecret };
  }

  private checkFields(name: string, scopes: string[], productKeys: string[], actorIsPlatformAdmin: boolean): void {
    const errors: Record<string, string> = {};
    if (name.length === 0 || name.length > 200) errors['name'] = 'must be 1 to 200 characters';
    const unknownScopes = scopes.filter((s) => !isScope(s));
    if (unknownScopes.length > 0) errors['scopes'] = `unknown scope ${unknownScopes.join(', ')}; known: ${SCOPES.join(', ')}`;
    const { ownProductKey, internalProductKeys, legacyProductKeys } = this.options;
    const legacy = productKeys.filter((k) => legacyProductKeys.includes(k));
    const unknown = productKeys.filter((k) => k !== ownProductKey && !internalProductKeys.includes(k) && !legacy.includes(k));
    if (legacy.length > 0) errors['productKeys'] = `${legacy.join(', ')} is a legacy product key and may not be used`;
    else if (unknown.length > 0) errors['productKeys'] = `unknown product key ${unknown.join(', ')}`;
    if (Object.keys(errors).length > 0) throw validationProblem(errors);
    const internal = productKeys.filter((k) => internalProductKeys.includes(k));
    if (internal.length > 0 && !actorIsPlatformAdmin) {
      throw new ProblemException(
        OAuthClientProblems['product-key-not-allowed'],
        `Only platform admins may allow the internal product key${internal.length === 1 ? '' : 's'} ${internal.join(', ')}.`,
        { productKeys: internal },
      );
    }
  }
}

function notFound(clientId: string): ProblemException {
  // The same answer for a client of another tenant: its existence is not revealed.
  return new ProblemException(OAuthClientProblems['oauth-client-not-found'], `No OAuth client ${clientId.slice(0, 64)} in this tenant.`);
}
