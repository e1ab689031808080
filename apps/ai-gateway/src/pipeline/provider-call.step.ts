import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { type Exchange, JSON_TYPE } from '@flagship/lean-http';
import { inSpan } from '@flagship/tracing';
import { GatewayError } from '../gateway.errors';
import type { GatewayRequest } from '../openai/openai-request';
import { type CallCutter, type ProviderClient, ProviderError, type ProviderKey, type Usage } from '../providers/provider.types';
import { lostUsage } from './lost-usage';
import { ModelCallSpan } from './model-call.span';

/** What the settle step needs to know of a call. */
export interface CallOutcome {
  provider: ProviderKey;
  status: 'succeeded' | 'failed';
  usage: Usage;
  upstreamMs: number;
  /** Why a row failed, or how a served stream ended early (`client_disconnected`). */
  errorCode: string | null;
  /** For metrics. */
  outcome: string;
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, estimated: false };

const SSE_HEADERS: OutgoingHttpHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/**
 * Longest an answer waits for its row's "upstream called" stamp. The stamp is one small UPDATE per
 * event-loop turn, committed in about a millisecond; only a Postgres that stopped answering since the
 * reservation makes it wait this long, and then the answer goes out all the same (availability first;
 * the settlement is retried until Postgres is back).
 */
const STAMP_WAIT_MS = 1000;

function waitAtMost(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * The outcome as the tenant is charged for it: a usage the provider never reported (estimated by the
 * provider layer from the text) becomes lostUsage's charge, from the request's admission estimate.
 */
function charged(request: GatewayRequest, outcome: CallOutcome): CallOutcome {
  if (!outcome.usage.estimated) return outcome;
  // A non-streamed call fails with a usage only when it was sent and its answer never came.
  const read = request.stream ? 'stream' : outcome.status === 'succeeded' ? 'whole' : 'lost';
  const usage = lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: outcome.usage.outputTokens, read });
  return { ...outcome, usage };
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Step 8: the provider, through the provider layer (ProviderClient: pooled upstreams, retries
 * before the first byte, breakers, fallback among `providers`). Answers the client itself (the
 * upstream's JSON as it is, or its events as they arrive) and reports what happened; a failure before
 * anything reached the client is thrown as the matching GatewayError (502/503/504) after the outcome
 * was handed to `failed`, so the row is completed either way. No answer goes out before the row's
 * "upstream called" stamp is written (`stamp`, waited for at most STAMP_WAIT_MS).
 */
export class ProviderCallStep {
  constructor(private readonly client: ProviderClient) {}

  call(
    x: Exchange,
    request: GatewayRequest,
    providers: ProviderKey[],
    headers: OutgoingHttpHeaders,
    overheadMs: (upstreamMs: number) => number,
    failed: (outcome: CallOutcome) => void,
    /** The row's "upstream called" stamp (ReservationStep.upstreamCalled): no answer goes out before it, or STAMP_WAIT_MS. */
    stamp: Promise<void>,
    cutter?: CallCutter,
  ): Promise<CallOutcome> {
    // Tracing on: the call's GenAI span, parent of the provider layer's HTTP spans. Off: undefined, and nothing more is done.
    const span = ModelCallSpan.start(request);
    const run = async (): Promise<CallOutcome> => charged(request, await this.callUpstream(x, request, providers, headers, overheadMs, failed, stamp, cutter, span));
    if (span === undefined) return run();
    return inSpan(span.span, run).then(
      (outcome) => {
        span.end(outcome);
        return outcome;
      },
      (err: unknown) => {
        span.thrown(err);
        throw err;
      },
    );
  }

  private async callUpstream(
    x: Exchange,
    request: GatewayRequest,
    providers: ProviderKey[],
    headers: OutgoingHttpHeaders,
    overheadMs: (upstreamMs: number) => number,
    failed: (outcome: CallOutcome) => void,
    stamp: Promise<void>,
    cutter: CallCutter | undefined,
    span?: ModelCallSpan,
  ): Promise<CallOutcome> {
    let stamped = false;
    const stampWritten = stamp.then(() => {
      stamped = true;
    });
    // Usually written long before the provider answers: then nothing is waited for, and no timer is set.
    const beforeAnswer = (): Promise<void> | undefined => (stamped ? undefined : waitAtMost(stampWritten, STAMP_WAIT_MS));
    const controller = new AbortController();
    const res = x.res;
    let clientGone = false;
    const onClose = (): void => {
      if (res.writableFinished) return;
      clientGone = true;
      controller.abort();
    };
    // A client that left before this point is not sent upstream at all (and pays nothing).
    if (res.destroyed || res.socket === null || res.socket.destroyed) onClose();
    else res.once('close', onClose);
    const dialect = request.dialect;
    // Made only for another API's request: the chat hot path allocates nothing more.
    const context = dialect === undefined ? undefined : { requestId: x.requestId, model: request.model.id, body: request.original ?? request.body };
    const upstream = { endpoint: request.endpoint, body: request.body, stream: request.stream, requestId: x.requestId, providers, signal: controller.signal, cutter };
    try {
      if (!request.stream) {
        const result = await this.client.json(upstream);
        span?.answered(result.body);
        await beforeAnswer();
        const ok = result.status >= 200 && result.status < 300;
        // Another API's client gets the answer (or the provider's refusal) in its API's terms.
        const body = dialect === undefined ? result.body : ok ? dialect.answer(parseJson(result.body), context!) : dialect.refusal(result.status, result.body);
        x.send(result.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': overheadMs(result.upstreamMs).toFixed(2) }, body);
        // A client that left after the request was sent is billed the answer's usage all the same.
        const gone = ok && clientGone;
        return {
          provider: result.provider,
          status: ok ? 'succeeded' : 'failed',
          usage: ok ? result.usage : NO_USAGE,
          upstreamMs: result.upstreamMs,
          errorCode: ok ? (gone ? 'client_disconnected' : null) : `upstream_${result.status}`,
          outcome: ok ? (gone ? 'client_gone' : 'succeeded') : 'upstream_refused',
        };
      }
      let out: ServerResponse | undefined;
      // Events read from the upstream before the stamp is written wait here, so the upstream is read
      // as it arrives (a connection it breaks right after its first events loses none of them).
      let held: Buffer[] | undefined;
      let opened: Promise<void> | undefined;
      const translator = dialect?.stream(context!);
      const write = (bytes: Buffer | undefined): void => {
        if (bytes === undefined) return;
        if (held !== undefined) held.push(bytes);
        else if (out !== undefined && !out.writableEnded && !out.destroyed) out.write(bytes);
      };
      const sink = {
        start: (provider: ProviderKey): void => {
          const open = (): void => {
            // The head goes out before the upstream's time is known: the overhead is what preceded the call.
            out = x.startStream(200, { ...headers, ...SSE_HEADERS, 'x-gateway-overhead-ms': overheadMs(0).toFixed(2), 'x-gateway-provider': provider });
            const waiting = held ?? [];
            held = undefined;
            for (const bytes of waiting) write(bytes);
          };
          const wait = beforeAnswer();
          if (wait === undefined) open();
          else {
            held = [];
            opened = wait.then(open);
          }
        },
        chunk: (bytes: Buffer): void => {
          span?.chunk(bytes);
          write(translator === undefined ? bytes : translator.push(bytes));
        },
      };
      const result = await this.client.stream(upstream, sink);
      await opened;
      if (result.outcome === 'rejected') {
        await beforeAnswer();
        const rejection = result.rejection ?? { status: 502, body: Buffer.from('{"error":{"message":"The provider refused the request.","type":"server_error","code":"provider_error","param":null}}') };
        const body = dialect === undefined ? rejection.body : dialect.refusal(rejection.status, rejection.body);
        x.send(rejection.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': overheadMs(result.upstreamMs).toFixed(2) }, body);
        return { provider: result.provider, status: 'failed', usage: NO_USAGE, upstreamMs: result.upstreamMs, errorCode: `upstream_${rejection.status}`, outcome: 'upstream_refused' };
      }
      if (translator !== undefined) write(translator.end());
      if (out !== undefined && !out.writableEnded && !out.destroyed) out.end();
      if (result.outcome === 'completed') {
        return { provider: result.provider, status: 'succeeded', usage: result.usage, upstreamMs: result.upstreamMs, errorCode: null, outcome: 'succeeded' };
      }
      // What was delivered is recorded and charged either way; a client that left was served, a broken (or cut) upstream was not.
      if (result.outcome === 'client_gone') {
        return { provider: result.provider, status: 'succeeded', usage: result.usage, upstreamMs: result.upstreamMs, errorCode: 'client_disconnected', outcome: 'client_gone' };
      }
      const code = cutter?.cut ? 'gateway_shutdown' : 'upstream_broken';
      return { provider: result.provider, status: 'failed', usage: result.usage, upstreamMs: result.upstreamMs, errorCode: code, outcome: code };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      // A time-out, cut or give-up after sending carries a usage: the provider had the request (see charged()).
      const code = cutter?.cut ? 'gateway_shutdown' : clientGone && err.code === 'provider_error' ? 'client_disconnected' : err.code;
      const outcome = charged(request, { provider: err.provider, status: 'failed', usage: err.usage, upstreamMs: 0, errorCode: code, outcome: code });
      span?.end(outcome);
      failed(outcome);
      throw new GatewayError(err.status, err.code, err.message, null, err.status === 503 ? { 'retry-after': '1' } : {});
    } finally {
      res.removeListener('close', onClose);
    }
  }
}
