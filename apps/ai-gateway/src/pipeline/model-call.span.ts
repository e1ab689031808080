import type { Span } from '@opentelemetry/api';
import { failSpan, startClientSpan, tracingStarted } from '@flagship/tracing';
import type { GatewayRequest } from '../openai/openai-request';
import { isRecord } from '../providers/usage';
import type { ProviderKey } from '../providers/provider.types';
import type { ChargedCall } from './call-outcome';

/**
 * The span of one model call, in the OpenTelemetry GenAI semantic conventions (inference client
 * span: `{operation} {model}`, kind CLIENT): operation, provider, requested and answering model,
 * token usage, and for a stream the time to its first chunk (`gen_ai.response.time_to_first_chunk`,
 * seconds). Retries and fallback are inside it, as the conventions ask. Only ids, names and counts are
 * recorded: never the prompt or the completion (content capture is off).
 */
export class ModelCallSpan {
  private firstChunkAt: number | undefined;
  private described = false;
  private ended = false;

  private constructor(
    readonly span: Span,
    private readonly startedAt: number,
  ) {}

  /** Undefined when tracing is off: no attribute is computed then. */
  static start(request: GatewayRequest): ModelCallSpan | undefined {
    if (!tracingStarted()) return undefined;
    const operation = request.endpoint === 'embeddings' ? 'embeddings' : 'chat';
    const span = startClientSpan(`${operation} ${request.model.id}`, {
      'gen_ai.operation.name': operation,
      // Both providers speak OpenAI's API, the conventions' name for what the client knows it calls;
      // which of the gateway's providers answered is `flagship.gateway.provider`.
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': request.model.id,
    });
    return span === undefined ? undefined : new ModelCallSpan(span, performance.now());
  }

  /** A whole (non-streamed) answer: its id and model. */
  answered(body: Buffer): void {
    this.describe(parse(body.toString('utf8')));
  }

  /** A stream's events as relayed: the first one's time, id and model. */
  chunk(bytes: Buffer): void {
    if (this.firstChunkAt !== undefined) return;
    this.firstChunkAt = performance.now();
    this.span.setAttribute('gen_ai.response.time_to_first_chunk', (this.firstChunkAt - this.startedAt) / 1000);
    // The first event (`data: {...}`) names the model; later ones repeat it.
    const text = bytes.toString('utf8');
    const start = text.indexOf('data: {');
    if (start < 0) return;
    const end = text.indexOf('\n', start);
    this.describe(parse(text.slice(start + 6, end < 0 ? undefined : end)));
  }

  /** The call as it is charged (chargedCall), by the provider that answered or failed last. */
  end(provider: ProviderKey, call: ChargedCall): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttributes({
      'flagship.gateway.provider': provider,
      'gen_ai.usage.input_tokens': call.usage.inputTokens,
      'gen_ai.usage.output_tokens': call.usage.outputTokens,
      'flagship.gateway.usage_estimated': call.usage.estimated,
    });
    // A client that left was served: not a failure of the call.
    if (call.status === 'failed') failSpan(this.span, call.errorCode ?? call.label);
    this.span.end();
  }

  /** An error the step did not turn into an outcome (a bug, not the provider). */
  thrown(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    failSpan(this.span, err instanceof Error ? err.name : 'error');
    this.span.end();
  }

  private describe(answer: unknown): void {
    if (this.described || !isRecord(answer)) return;
    this.described = true;
    if (typeof answer.model === 'string') this.span.setAttribute('gen_ai.response.model', answer.model);
    if (typeof answer.id === 'string') this.span.setAttribute('gen_ai.response.id', answer.id);
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
