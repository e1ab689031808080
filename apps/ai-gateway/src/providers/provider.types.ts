/**
 * The seam between the gateway's pipeline (apps/ai-gateway/src/pipeline, ledger) and the provider
 * layer (this folder). The pipeline decides WHICH providers may serve a request (entitlement,
 * `x-service-provider`, hosted permission, emergency fallback) and owns the ledger; the provider layer
 * only talks to upstreams: pooled connections, time-outs, retries before the first byte, circuit
 * breakers, fallback among the providers it was allowed, streaming relay and usage accounting.
 *
 * Wiring (NOTE from the provider helper): spread `providerEnv` (./provider.env) into the app's env schema,
 * import `ProvidersModule.forRoot(providerOptionsFromEnv(config, secrets))` (./providers.module; `secrets`
 * is the app's SecretStore, holding PROVIDER_INHOUSE_API_KEY / PROVIDER_HOSTED_API_KEY) and inject
 * `PROVIDER_CLIENT`. Its `circuits()` gives each provider's breaker state for readiness or metrics.
 */

/** CONTRACT.md section 7. */
export type ProviderKey = 'inhouse' | 'hosted';

export type Endpoint = 'chat.completions' | 'embeddings';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** True when the upstream sent no usage and the counts were estimated from the text. */
  estimated: boolean;
  /** Of inputTokens, those the upstream reported as cached (`prompt_tokens_details.cached_tokens`); absent: none. */
  cachedTokens?: number;
}

export interface UpstreamRequest {
  endpoint: Endpoint;
  /** The client's body, validated by the pipeline; passed on untouched except where the provider layer must (stream_options.include_usage). */
  body: Record<string, unknown>;
  stream: boolean;
  requestId: string;
  /** Providers to try in order: the first is the one asked for; a second only when fallback is permitted. */
  providers: readonly ProviderKey[];
  /** Aborted when the client goes away: stops the call until it is sent, not after (it is paid for then). */
  signal: AbortSignal;
  /** How the gateway stops the call when its shutdown grace ends, whatever its state (what was sent is billed, estimated). */
  cutter?: CallCutter;
}

/**
 * A call's off switch for shutdown: the provider layer sets `stop` while the call runs; `cut` set
 * first stops it as it starts. A plain object rather than an AbortSignal: no listener per request.
 */
export interface CallCutter {
  cut: boolean;
  stop: (() => void) | undefined;
}

/** Failures before anything reached the client, mapped by the pipeline to OpenAI's error body. */
export type ProviderErrorCode = 'provider_unavailable' | 'provider_error' | 'provider_timeout';

export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    /** 503, 502 or 504 (CONTRACT.md section 7). */
    readonly status: 503 | 502 | 504,
    message: string,
    /** The provider that failed last. */
    readonly provider: ProviderKey,
    /** What the tenant pays: zero, but for a request the provider had (a time-out after sending), estimated. */
    readonly usage: Usage = { inputTokens: 0, outputTokens: 0, estimated: false },
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** A non-streamed answer: the upstream's status and JSON body, relayed as they are. */
export interface JsonResult {
  provider: ProviderKey;
  status: number;
  body: Buffer;
  usage: Usage;
  /** Milliseconds from sending upstream to the whole answer read. */
  upstreamMs: number;
}

/**
 * Where a streamed answer goes, written by the provider layer as the upstream's server-sent events
 * arrive. `start` is called once, before the first chunk, and only when the upstream answered 200;
 * before `start`, failures are thrown as ProviderError (and may be retried or fall back); after it,
 * they end the stream through `finish`.
 */
export interface StreamSink {
  start(provider: ProviderKey): void;
  /** One or more complete SSE events (`data: ...\n\n`), as bytes to write to the client. */
  chunk(bytes: Buffer): void;
}

export interface StreamResult {
  provider: ProviderKey;
  usage: Usage;
  /**
   * 'completed': `[DONE]` relayed; 'client_gone': the client disconnected; 'upstream_broken': an error event was written and no `[DONE]`;
   * 'rejected': the upstream answered a 4xx before any event (sink.start NOT called): relay `rejection` as a JSON answer.
   */
  outcome: 'completed' | 'client_gone' | 'upstream_broken' | 'rejected';
  /**
   * SEAM CHANGE (provider helper): a streamed request the upstream refuses (400 bad model, 401, 429, ...) has no stream to
   * write, yet its 4xx must reach the client as is, like json()'s: present exactly when outcome is 'rejected'.
   */
  rejection?: { status: number; body: Buffer };
  upstreamMs: number;
}

export interface ProviderClient {
  /** Throws ProviderError when no allowed provider could answer. An upstream 4xx is not an error: it is relayed as a JsonResult. */
  json(request: UpstreamRequest): Promise<JsonResult>;
  /** Throws ProviderError only before sink.start; resolves when the stream has ended in any way. */
  stream(request: UpstreamRequest, sink: StreamSink): Promise<StreamResult>;
  /** GET /v1/models of the configured providers, for the gateway's own /v1/models. */
  configured(): ReadonlyArray<{ provider: ProviderKey; models: readonly string[] }>;
  close(): Promise<void>;
}
