import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { parseModelRoute } from '@flagship/domain';
import { isUniqueViolation, TransactionRunner } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import type { CallerContext } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsService } from '../environments/environments.service';
import { BudgetProblems } from '../billing/budgets.errors';
import { etagMatches } from '../flags/flag-rules';
import { FlagsService } from '../flags/flags.service';
import { Quotas } from '../quotas/quotas';
import { MAX_SPEND_CAPS, type PutGatewayBindingDto } from './gateway-bindings.dto';
import { bindingNotFound, GatewayBindingProblems } from './gateway-bindings.errors';
import { type BindingAuditRow, type BindingFields, type BindingRow, GatewayBindingsRepository, type RolloutPlan } from './gateway-bindings.repository';

/** What the service needs of the tenant acting (CurrentTenant). */
export interface BindingTenant {
  id: string;
  hostedProviderAllowed: boolean;
}

export const bindingEtag = (row: Pick<BindingRow, 'version'>): string => `"${row.version}"`;

const FIELDS: ReadonlyArray<keyof BindingFields> = ['flagKey', 'modelAlias', 'environment', 'rolloutPlan', 'spendCaps'];

/**
 * Gateway routes bound to JSON flags (CONTRACT.md section 11): a tenant admin binds a product key
 * (optionally one model alias) to a flag of one environment whose every variation is a model route
 * `{model, provider?, params?}` (libs/domain parseModelRoute, the gateway's own check), the hosted
 * provider only for a tenant allowed it; spend caps name the flag's variations. Versioned (ETag,
 * If-Match), audited, within the tenant's quota, and announced on `gateway-binding-changed` once
 * committed so gateways route by it at once. The gateway checks every flag version again when it
 * evaluates (a flag edited after its binding), with its own catalogue of models and provider rules,
 * and serves the route's default with a reason rather than a variation it may not.
 */
@Injectable()
export class GatewayBindingsService {
  private readonly logger = new Logger('GatewayBindingsService');
  private readonly productKeys: ReadonlySet<string>;

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: GatewayBindingsRepository,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve'>,
    @Inject(FlagsService) private readonly flags: Pick<FlagsService, 'get'>,
    @Inject(Quotas) private readonly quotas: Pick<Quotas, 'reserve'>,
    @Inject(PUBSUB) private readonly pubsub: Pick<PubSub, 'publish'>,
    @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'PRODUCT_KEY_OWN' | 'internalProductKeys'>,
  ) {
    this.productKeys = new Set([config.PRODUCT_KEY_OWN, ...config.internalProductKeys]);
  }

  list(tenantId: string): Promise<BindingRow[]> {
    return this.repo.list(tenantId);
  }

  async get(tenantId: string, productKey: string): Promise<BindingRow> {
    const row = await this.repo.find(tenantId, productKey);
    if (!row) throw bindingNotFound(productKey);
    return row;
  }

  /** Creates or replaces the binding; `If-Match` (optional) must name its version, and a binding that does not exist matches none. */
  async put(tenant: BindingTenant, env: string | undefined, caller: CallerContext, productKey: string, dto: PutGatewayBindingDto, ifMatch?: string): Promise<BindingRow> {
    if (!this.productKeys.has(productKey)) throw new ProblemException(BudgetProblems['product-key-not-found'], `The gateway knows no product key ${productKey}.`);
    const environment = await this.environments.resolve(tenant.id, env);
    const fields: BindingFields = {
      flagKey: dto.flagKey,
      modelAlias: dto.modelAlias ?? null,
      environment,
      rolloutPlan: (dto.rolloutPlan as RolloutPlan | null | undefined) ?? null,
      spendCaps: dto.spendCaps ?? null,
    };
    await this.check(tenant, environment, fields);
    let written: BindingRow;
    try {
      written = await this.transactions.run(async (m) => {
        const row = await this.repo.lock(m, tenant.id, productKey);
        if (ifMatch !== undefined && (row === null || !etagMatches(ifMatch, bindingEtag(row)))) throw stale(row);
        if (row === null) {
          await this.quotas.reserve(m, 'gateway-bindings-per-tenant', tenant.id);
          const inserted = await this.repo.insert(m, tenant.id, productKey, fields);
          await this.repo.audit(m, tenant.id, { productKey, action: 'create', actor: caller.callerId, changes: { ...fields } });
          return inserted;
        }
        const changes: Record<string, unknown> = {};
        for (const f of FIELDS) if (JSON.stringify(row[f]) !== JSON.stringify(fields[f])) changes[f] = { from: row[f], to: fields[f] };
        if (Object.keys(changes).length === 0) return row;
        const updated = await this.repo.update(m, tenant.id, productKey, row.version, fields);
        if (updated === null) throw stale(row);
        await this.repo.audit(m, tenant.id, { productKey, action: 'update', actor: caller.callerId, changes });
        return updated;
      });
    } catch (err) {
      // Another PUT created it between our lock (of nothing) and our insert.
      if (isUniqueViolation(err)) throw stale(null);
      throw err;
    }
    await this.announce(tenant.id, productKey);
    return written;
  }

  async remove(tenantId: string, caller: CallerContext, productKey: string, ifMatch?: string): Promise<void> {
    await this.transactions.run(async (m) => {
      const row = await this.repo.lock(m, tenantId, productKey);
      if (!row) throw bindingNotFound(productKey);
      if (ifMatch !== undefined && !etagMatches(ifMatch, bindingEtag(row))) throw stale(row);
      await this.repo.delete(m, tenantId, productKey);
      const { tenantId: _t, productKey: _p, version: _v, createdAt: _c, updatedAt: _u, ...was } = row;
      await this.repo.audit(m, tenantId, { productKey, action: 'delete', actor: caller.callerId, changes: was });
    });
    await this.announce(tenantId, productKey);
  }

  async auditTrail(tenantId: string, productKey: string): Promise<BindingAuditRow[]> {
    return this.repo.auditTrail(tenantId, productKey);
  }

  /** The flag exists in the environment, is JSON, every variation a route the tenant may use; caps name its variations. 422 naming each problem. */
  private async check(tenant: BindingTenant, environment: string, fields: BindingFields): Promise<void> {
    const errors: Record<string, string> = {};
    let variations: Array<{ id: string; name: string; value: unknown }> = [];
    try {
      const found = await this.flags.get(tenant.id, environment, fields.flagKey);
      if (found.flag.type !== 'json') errors['flagKey'] = `flag ${fields.flagKey} is a ${found.flag.type} flag; a binding needs a json flag whose variations are {model, provider?, params?}`;
      else variations = found.flag.variations;
    } catch (err) {
      if (!(err instanceof ProblemException && err.getStatus() === 404)) throw err;
      errors['flagKey'] = `no flag ${fields.flagKey} in environment ${environment}`;
    }
    for (const v of variations) {
      const parsed = parseModelRoute(v.value);
      if ('problem' in parsed) errors[`variations.${v.id}`] = `variation ${v.name} ${parsed.problem}`;
      else if (parsed.route.provider === 'hosted' && !tenant.hostedProviderAllowed) {
        errors[`variations.${v.id}`] = `variation ${v.name} names the hosted provider, which this tenant is not allowed`;
      }
    }
    const caps = fields.spendCaps;
    if (caps !== null) {
      const entries = Object.entries(caps);
      if (entries.length > MAX_SPEND_CAPS) errors['spendCaps'] = `at most ${MAX_SPEND_CAPS} variations may be capped`;
      const ids = new Set(variations.map((v) => v.id));
      for (const [id, cap] of entries.slice(0, MAX_SPEND_CAPS)) {
        if (typeof cap !== 'number' || !Number.isSafeInteger(cap) || cap < 0) errors[`spendCaps.${id.slice(0, 64)}`] = 'must be an integer of micro-credits, at least 0';
        else if (variations.length > 0 && !ids.has(id)) errors[`spendCaps.${id.slice(0, 64)}`] = `flag ${fields.flagKey} has no variation with this id`;
      }
    }
    if (Object.keys(errors).length > 0) throw validationProblem(errors);
  }

  /** Committed: gateways drop their copy (a lost announcement is healed by their cache's time limit). */
  private async announce(tenantId: string, productKey: string): Promise<void> {
    await this.pubsub.publish(CHANNELS.gatewayBindingChanged, { tenantId, productKey }).catch((err: Error) => this.logger.warn(`publish failed: ${err.message}`));
  }
}

function stale(row: BindingRow | null): ProblemException {
  return row === null
    ? new ProblemException(GatewayBindingProblems['gateway-binding-changed'], 'The product key is not bound (or was bound meanwhile); read it again and retry.')
    : new ProblemException(GatewayBindingProblems['gateway-binding-changed'], `The binding is at version ${bindingEtag(row)}; read it again and retry.`, { currentVersion: bindingEtag(row) });
}
