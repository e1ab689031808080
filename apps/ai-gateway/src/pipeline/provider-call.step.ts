import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { type Exchange, JSON_TYPE } from '@flagship/lean-http';
import { inSpan } from '@flagship/tracing';
import type { Dialect } from '../dialects/dialect';
import { dependencyDown, GatewayError } from '../gateway.errors';
import type { GatewayRequest } from '../openai/openai-request';
import { type CallCutter, type ProviderClient, ProviderError, type ProviderKey } from '../providers/provider.types';
import { type CallOutcome, chargedCall } from './call-outcome';
import { ModelCallSpan } from './model-call.span';

/** One request as the provider step sends it and answers it. */
export interface ProviderCall {
  /** The API the caller speaks: its answer, events and refusals are written in it. */
  dialect: Dialect;
  request: GatewayRequest;
  /** Providers to try in order (ProviderPermissionStep). */
  providers: ProviderKey[];
  /** The answer's headers known so far (the rate limit's). */
  headers: OutgoingHttpHeaders;
  /** The row's "upstream called" stamp (ReservationStep.upstreamCalled): no answer goes out before it, or STAMP_WAIT_MS. */
  stamp: Promise<void>;
  /** The gateway's off switch for this call (shutdown). */
  cutter: CallCutter;
  /** x.elapsedMs() when the call began: a stream's overhead (its head goes out before the upstream's time is known). */
  beforeCallMs: number;
}

const SSE_HEADERS: OutgoingHttpHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** What a stream the upstream refused without a body of its own is answered. */
const STREAM_REFUSED = Buffer.from('{"error":{"message":"The provider refused the request.","type":"server_error","code":"provider_error","param":null}}');

/**
 * Longest an answer waits for its row's "upstream called" stamp. The stamp is one small UPDATE per
 * event-loop turn, committed in about a millisecond, and usually long before the provider answers.
 * An answer is never sent without it: the stamp's commit is what puts the request's row on disk
 * (its reservation was committed without waiting for the flush), so a Postgres that fails or stalls
 * past this bound gets the request refused (503, charged nothing) rather than answered unbilled.
 */
const STAMP_WAIT_MS = 5000;

/** The stamp failed or did not land within STAMP_WAIT_MS. */
class StampNotWritten extends Error {}

function stampWithin(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StampNotWritten(`no "upstream called" stamp within ${ms} ms`)), ms);
  });
  const written = p.catch((err: unknown) => {
    throw new StampNotWritten(err instanceof Error ? err.message : String(err));
  });
  return Promise.race([written, late]).finally(() => clearTimeout(timer));
}

/** What a request whose answer was withheld for want of its stamp is: failed, charged nothing, a 503. */
function withheld(provider: ProviderKey): CallOutcome {
  return { kind: 'failed', provider, usage: { inputTokens: 0, outputTokens: 0, estimated: false }, code: 'ledger_unavailable', error: dependencyDown('Postgres') };
}

/**
 * Step 8: the provider, through the provider layer (ProviderClient: pooled upstreams, retries
 * before the first byte, breakers, fallback among `providers`). Answers the caller itself, in its
 * API (the dialect's answer, events or refusal), and says what happened (CallOutcome); it writes no
 * error of its own: a failure before anything reached the caller is the outcome `failed`, whose
 * `error` the handler writes once the call is settled. No answer goes out before the row's "upstream
 * called" stamp is written (`stamp`); one that is not written within STAMP_WAIT_MS is withheld.
 */
export class ProviderCallStep {
  constructor(private readonly client: ProviderClient) {}

  call(x: Exchange, call: ProviderCall): Promise<CallOutcome> {
    // Tracing on: the call's GenAI span, parent of the provider layer's HTTP spans. Off: undefined, and nothing more is done.
    const span = ModelCallSpan.start(call.request);
    if (span === undefined) return this.callUpstream(x, call, undefined);
    return inSpan(span.span, () => this.callUpstream(x, call, span)).then(
      (outcome) => {
        span.end(outcome.provider, chargedCall(outcome, call.request));
        return outcome;
      },
      (err: unknown) => {
        span.thrown(err);
        throw err;
      },
    );
  }

  private async callUpstream(x: Exchange, call: ProviderCall, span: ModelCallSpan | undefined): Promise<CallOutcome> {
    const { dialect, request, headers, cutter } = call;
    let stamped = false;
    const stampWritten = call.stamp.then(() => {
      stamped = true;
    });
    // Awaited only before an answer: a failed stamp of a call that never answers is nobody's error.
    stampWritten.catch(() => undefined);
    // Usually written long before the provider answers: then nothing is waited for, and no timer is set.
    const beforeAnswer = (): Promise<void> | undefined => (stamped ? undefined : stampWithin(stampWritten, STAMP_WAIT_MS));
    // A stream held for its stamp that never came: the upstream is left, the caller refused.
    let stampMissing = false;
    // The time the gateway itself spent: all but the upstream's, or (for a stream's head) what preceded the call.
    const overhead = (upstreamMs: number): number => (upstreamMs > 0 ? x.elapsedMs() - upstreamMs : call.beforeCallMs);
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
    const upstream = { endpoint: request.endpoint, body: request.body, stream: request.stream, requestId: x.requestId, providers: call.providers, signal: controller.signal, cutter };
    try {
      if (!request.stream) {
        const result = await this.client.json(upstream);
        span?.answered(result.body);
        try {
          await beforeAnswer();
        } catch (err) {
          if (err instanceof StampNotWritten) return withheld(result.provider);
          throw err;
        }
        const ok = result.status >= 200 && result.status < 300;
        const body = ok ? dialect.answer(result.body, request, x.requestId) : dialect.refusal(result.status, result.body);
        const overheadMs = overhead(result.upstreamMs);
        x.send(result.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': overheadMs.toFixed(2) }, body);
        if (!ok) return { kind: 'refused', provider: result.provider, status: result.status, upstreamMs: result.upstreamMs, overheadMs };
        // A client that left after the request was sent is billed the answer's usage all the same.
        return { kind: 'answered', provider: result.provider, usage: result.usage, upstreamMs: result.upstreamMs, overheadMs, clientGone };
      }
      let out: ServerResponse | undefined;
      let streamOverheadMs: number | undefined;
      // Events read from the upstream before the stamp is written wait here, so the upstream is read
      // as it arrives (a connection it breaks right after its first events loses none of them).
      let held: Buffer[] | undefined;
      let firstTokenMs: number | undefined;
      let opened: Promise<void> | undefined;
      const translator = dialect.stream(request, x.requestId);
      const write = (bytes: Buffer | undefined): void => {
        if (bytes === undefined) return;
        if (held !== undefined) held.push(bytes);
        else if (out !== undefined && !out.writableEnded && !out.destroyed) out.write(bytes);
      };
      const sink = {
        start: (provider: ProviderKey): void => {
          const open = (): void => {
            streamOverheadMs = overhead(0);
            out = x.startStream(200, { ...headers, ...SSE_HEADERS, 'x-gateway-overhead-ms': streamOverheadMs.toFixed(2), 'x-gateway-provider': provider });
            const waiting = held ?? [];
            held = undefined;
            for (const bytes of waiting) write(bytes);
          };
          const wait = beforeAnswer();
          if (wait === undefined) open();
          else {
            held = [];
            opened = wait.then(open, (err: unknown) => {
              if (!(err instanceof StampNotWritten)) throw err;
              stampMissing = true;
              controller.abort();
            });
          }
        },
        chunk: (bytes: Buffer): void => {
          span?.chunk(bytes);
          firstTokenMs ??= x.elapsedMs() - call.beforeCallMs;
          write(translator === undefined ? bytes : translator.push(bytes));
        },
      };
      const result = await this.client.stream(upstream, sink);
      await opened;
      if (stampMissing) return withheld(result.provider);
      if (result.outcome === 'rejected') {
        // A refusal is not billed: it may go out without the stamp.
        await beforeAnswer()?.catch(() => undefined);
        const rejection = result.rejection ?? { status: 502, body: STREAM_REFUSED };
        const overheadMs = overhead(result.upstreamMs);
        x.send(rejection.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': overheadMs.toFixed(2) }, dialect.refusal(rejection.status, rejection.body));
        return { kind: 'refused', provider: result.provider, status: rejection.status, upstreamMs: result.upstreamMs, overheadMs };
      }
      if (translator !== undefined) write(translator.end());
      if (out !== undefined && !out.writableEnded && !out.destroyed) out.end();
      // What was delivered is charged either way; a client that left was served, a broken (or cut) upstream was not.
      const end = result.outcome === 'upstream_broken' && cutter.cut ? 'gateway_shutdown' : result.outcome;
      return { kind: 'streamed', provider: result.provider, usage: result.usage, upstreamMs: result.upstreamMs, overheadMs: streamOverheadMs, end, ...(firstTokenMs === undefined ? {} : { firstTokenMs }) };
    } catch (err) {
      // Set only once the held stream's wait has failed: nothing reached the caller.
      if (stampMissing && err instanceof ProviderError) return withheld(err.provider);
      if (!(err instanceof ProviderError)) throw err;
      // A time-out, cut or give-up after sending carries a usage: the provider had the request (see chargedCall).
      const code = cutter.cut ? 'gateway_shutdown' : clientGone && err.code === 'provider_error' ? 'client_disconnected' : err.code;
      const error = new GatewayError(err.status, err.code, err.message, null, err.status === 503 ? { 'retry-after': '1' } : {});
      return { kind: 'failed', provider: err.provider, usage: err.usage, code, error };
    } finally {
      res.removeListener('close', onClose);
    }
  }
}
