import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG } from '@flagship/config';
import { isPlan, type Plan } from '@flagship/domain';
import { FlagStore } from '@flagship/flag-store';
import { ProblemException } from '@flagship/problem-details';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { addressBucket, clientAddress } from '@flagship/service-kit';
import { SseHub } from '@flagship/sse';
import { AuthProblems, BEARER_CHALLENGE } from '../auth/auth.errors';
import { TenantAccessResolver, type TenantPrincipal } from '../auth/tenant-access.resolver';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsService } from '../environments/environments.service';
import { type GroupedStream, FlagStreamGroups } from './flag-stream-groups';
import { type AccessedStream, FlagStreamAccess } from './flag-stream-access';
import { type AdmittedStream, flagStreamBounds, type StreamBound } from './flag-stream-admission';
import { FlagProblems } from './flags.errors';

export { FLAG_STREAM_ACCESS } from './flag-stream-access';

const RETRY_AFTER_S = 5;

/** Why the server ended a stream: the `end` event's reason. */
export type StreamEnd = 'access-withdrawn' | 'credential-expired' | 'max-age' | 'shed' | 'shutdown';

interface Stream extends AdmittedStream, AccessedStream, GroupedStream {
  /** What an unanswered stream the server ended is refused with, when its reason alone does not say. */
  refusal?: ProblemException;
}

/** The plan a stream is admitted under: a tenant row with a plan this build does not know counts as free, never as unbounded. */
const planOf = (p: TenantPrincipal): Plan => (isPlan(p.caller.plan) ? p.caller.plan : 'free');

/**
 * The flag-data stream (`GET /api/flag-stream`, described with its controller) on the SSE kit: the
 * hub admits by flagStreamBounds (per plan, person, client, /64 and process, shedding the newest
 * free-plan stream for a paid one), heartbeats, cuts off a consumer past
 * FLAG_STREAM_MAX_BUFFER_BYTES, paces the put, and ends a stream at its token's expiry or
 * FLAG_STREAM_MAX_AGE_SECONDS; FlagStreamGroups carries the flag store's changes and the replay window;
 * FlagStreamAccess ends a stream whose caller loses access. The server tells every end with an
 * `end` event naming why, then the client reconnects.
 */
@Injectable()
export class FlagStreams implements OnModuleDestroy {
  private readonly hub: SseHub<Stream, StreamEnd>;
  private readonly groups: FlagStreamGroups<Stream>;
  private readonly access: FlagStreamAccess<Stream>;
  private readonly maxAgeMs: number;

  constructor(@Inject(APP_CONFIG) config: ManagementApiConfig, store: FlagStore, private readonly environments: EnvironmentsService, resolver: TenantAccessResolver, @Inject(PUBSUB) pubsub: PubSub) {
    const logger = new Logger('FlagStreams');
    this.maxAgeMs = config.FLAG_STREAM_MAX_AGE_SECONDS * 1000;
    this.hub = new SseHub<Stream, StreamEnd>({
      bounds: flagStreamBounds({
        perTenant: { free: config.FLAG_STREAMS_PER_TENANT_FREE, standard: config.FLAG_STREAMS_PER_TENANT_STANDARD, premium: config.FLAG_STREAMS_PER_TENANT_PREMIUM },
        perUser: config.FLAG_STREAMS_PER_USER,
        perClient: config.FLAG_STREAMS_PER_CLIENT,
        perAddress: config.FLAG_STREAMS_PER_ADDRESS,
        perProcess: config.FLAG_STREAMS_PER_PROCESS,
      }),
      maxBufferedBytes: config.FLAG_STREAM_MAX_BUFFER_BYTES,
      heartbeatMs: config.FLAG_STREAM_HEARTBEAT_SECONDS * 1000,
      endFrame: (reason) => `event: end\ndata: {"reason":"${reason}"}\n\n`,
      onCutOff: (s, unsent) => logger.warn(`a flag-data stream of tenant ${s.tenantId} was closed: its client left ${unsent} bytes unread`),
    });
    this.groups = new FlagStreamGroups(store, this.hub);
    this.access = new FlagStreamAccess(pubsub, resolver, {
      streams: () => this.hub.streams(),
      ended: (s) => this.hub.endedWhy(s) !== undefined,
      // A plan changed (tenantChanged) moves the tenant's streams in or out of those shed first.
      granted: (s, principal) => (s.plan = planOf(principal)),
      refused: (s, refusal) => {
        s.refusal = refusal;
        this.hub.end(s, 'access-withdrawn');
      },
    });
  }

  onModuleDestroy(): void {
    this.access.close();
    // Open streams would hold the server's close until the grace period: they end now, and clients reconnect elsewhere.
    this.hub.close('shutdown');
    this.groups.close();
  }

  /**
   * Answers `res` with the stream, or throws the refusal (unknown environment, a bound reached,
   * Postgres away). `principal` is the request's, as the guards resolved it under FLAG_STREAM_ACCESS.
   */
  async open(principal: TenantPrincipal, requestedEnvironment: string | undefined, lastEventId: string | undefined, req: Request, res: Response): Promise<void> {
    const now = Date.now();
    const tenantId = principal.tenant.id;
    const stream: Stream = { tenantId, plan: planOf(principal), callerId: principal.caller.callerId, address: addressBucket(clientAddress(req)), authorization: req.headers.authorization };
    // Counted before the first await, so concurrent opens cannot all pass a bound.
    const decision = this.hub.admit(stream);
    if (!decision.admitted) throw this.refusal(decision.bound as StreamBound | 'closed', decision.limit, stream);
    if (decision.shed !== undefined) this.hub.end(decision.shed, 'shed');
    const expiresIn = principal.expiresAt - now;
    this.hub.deadline(stream, now + Math.max(0, Math.min(expiresIn, this.maxAgeMs)), expiresIn < this.maxAgeMs ? 'credential-expired' : 'max-age');
    this.access.opened(stream, now);
    let joined: Awaited<ReturnType<FlagStreamGroups<Stream>['join']>>;
    try {
      joined = await this.groups.join(tenantId, await this.environments.resolve(tenantId, requestedEnvironment));
    } catch (err) {
      this.hub.release(stream);
      throw err;
    }
    const ended = this.hub.endedWhy(stream);
    if (ended !== undefined) throw stream.refusal ?? (ended === 'credential-expired' ? new ProblemException(AuthProblems['invalid-token'], 'The token expired.', {}, BEARER_CHALLENGE) : this.full());
    if (req.socket.destroyed) return this.hub.release(stream);
    const { group, view } = joined;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    req.socket.setNoDelay(true);
    res.flushHeaders();
    this.hub.attach(stream, res);
    this.groups.listen(group, stream);
    res.on('close', () => this.groups.leave(group, stream));
    const replay = group.since(lastEventId);
    if (replay === undefined) return void this.groups.sendPut(group, stream, view);
    for (const e of replay) this.hub.write(stream, e.frame);
    // A comment at once: a resumed client with nothing to replay knows it is current without waiting for a heartbeat.
    this.hub.write(stream, ':\n\n');
  }

  /** Open streams of a tenant on this process (tests, metrics). */
  streamsOf(tenantId: string): number {
    return this.hub.count('tenant', tenantId);
  }

  /** Open streams on this process. */
  held(): number {
    return this.hub.size;
  }

  private refusal(bound: StreamBound | 'closed', limit: number, s: Stream): ProblemException {
    if (bound === 'process' || bound === 'closed') return this.full();
    const detail: Record<Exclude<StreamBound, 'process'>, string> = {
      tenant: `This tenant holds ${limit} flag-data streams on this server, the allowance of its ${s.plan} plan; close one (one per application process is enough).`,
      user: `You hold ${limit} flag-data streams on this server across your tenants, the most one person may; applications should stream with an OAuth client's token.`,
      client: `This OAuth client holds ${limit} flag-data streams on this server, the most one client may.`,
      address: `Your network holds ${limit} flag-data streams on this server, the most one address (an IPv6 /64) may.`,
    };
    return new ProblemException(FlagProblems['too-many-flag-streams'], detail[bound], { limit, per: bound }, { 'Retry-After': String(RETRY_AFTER_S * 6) });
  }

  private full(): ProblemException {
    return new ProblemException(
      FlagProblems['flag-streams-full'],
      `This server holds ${this.hub.size} flag-data streams, as many as it may; retry, another replica may take it.`,
      {},
      { 'Retry-After': String(RETRY_AFTER_S) },
    );
  }
}
