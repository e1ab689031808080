import type { GatewayError } from '../gateway.errors';
import type { ProviderKey, Usage } from '../providers/provider.types';
import { lostUsage } from './lost-usage';

/**
 * What the provider step did with a request (ProviderCallStep.call), for the settlement to charge:
 * - `answered`: the provider's 2xx JSON answer went out (the caller may have left meanwhile: it is paid for all the same);
 * - `refused`: the provider refused (a 4xx or 5xx before any event) and its refusal went out;
 * - `streamed`: the stream went out until it ended: completed, the caller left, the upstream broke, or the gateway's shutdown cut it;
 * - `failed`: nothing reached the caller (no provider answered, timed out, or cut); `error` is the refusal to write;
 * - `crashed`: the step threw (a bug): nothing is known of the call; `thrown` goes on to the HTTP layer's 500.
 * `usage` is the provider's report, or the provider layer's estimate from the text when it sent none (`estimated`).
 * `overheadMs` is the x-gateway-overhead-ms the answer carried, when the step wrote one.
 */
export type CallOutcome =
  | { kind: 'answered'; provider: ProviderKey; usage: Usage; upstreamMs: number; overheadMs: number; clientGone: boolean }
  | { kind: 'refused'; provider: ProviderKey; status: number; upstreamMs: number; overheadMs: number }
  | {
      kind: 'streamed';
      provider: ProviderKey;
      usage: Usage;
      upstreamMs: number;
      overheadMs: number | undefined;
      end: 'completed' | 'client_gone' | 'upstream_broken' | 'gateway_shutdown';
      /** From the provider call to its first event relayed (the ledger's first_token_ms); undefined: none came. */
      firstTokenMs?: number;
    }
  | { kind: 'failed'; provider: ProviderKey; usage: Usage; code: string; error: GatewayError }
  | { kind: 'crashed'; provider: ProviderKey; thrown: unknown };

/** What a request is charged as, and how its row and metrics record it. */
export interface ChargedCall {
  status: 'succeeded' | 'failed';
  /** The usage billed: the provider's, or for one it never reported, lostUsage's. */
  usage: Usage;
  /** Why a row failed, or how a served request ended early (`client_disconnected`). */
  errorCode: string | null;
  /** The metrics' `outcome` label. */
  label: string;
  upstreamMs: number;
}

/** What admission counted for a request: lostUsage's bounds. */
export interface Admitted {
  /** The admission estimate's input (openai-request's estimateInput). */
  inputTokens: number;
  /** The output reserved: max tokens per choice x `n`. */
  outputTokens: number;
  stream: boolean;
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, estimated: false };

/**
 * An outcome as it is charged and recorded. A client that left was served (`succeeded`,
 * `client_disconnected`); a broken or cut upstream was not. A usage the provider never reported
 * becomes lostUsage's charge from the admission's bounds: read as a stream, as a whole answer, or,
 * for a non-streamed request given up on after it was sent, as lost (its reserved output charged).
 */
export function chargedCall(outcome: CallOutcome, admitted: Admitted): ChargedCall {
  switch (outcome.kind) {
    case 'answered':
      return {
        status: 'succeeded',
        usage: charge(outcome.usage, admitted, 'whole'),
        errorCode: outcome.clientGone ? 'client_disconnected' : null,
        label: outcome.clientGone ? 'client_gone' : 'succeeded',
        upstreamMs: outcome.upstreamMs,
      };
    case 'refused':
      return { status: 'failed', usage: NO_USAGE, errorCode: `upstream_${outcome.status}`, label: 'upstream_refused', upstreamMs: outcome.upstreamMs };
    case 'streamed': {
      const usage = charge(outcome.usage, admitted, 'stream');
      if (outcome.end === 'completed') return { status: 'succeeded', usage, errorCode: null, label: 'succeeded', upstreamMs: outcome.upstreamMs };
      if (outcome.end === 'client_gone') return { status: 'succeeded', usage, errorCode: 'client_disconnected', label: 'client_gone', upstreamMs: outcome.upstreamMs };
      return { status: 'failed', usage, errorCode: outcome.end, label: outcome.end, upstreamMs: outcome.upstreamMs };
    }
    case 'failed':
      return { status: 'failed', usage: charge(outcome.usage, admitted, admitted.stream ? 'stream' : 'lost'), errorCode: outcome.code, label: outcome.code, upstreamMs: 0 };
    case 'crashed':
      return { status: 'failed', usage: NO_USAGE, errorCode: 'internal_error', label: 'internal_error', upstreamMs: 0 };
  }
}

function charge(usage: Usage, admitted: Admitted, read: 'stream' | 'whole' | 'lost'): Usage {
  if (!usage.estimated) return usage;
  return lostUsage({ admittedInputTokens: admitted.inputTokens, reservedOutputTokens: admitted.outputTokens, deliveredOutputTokens: usage.outputTokens, read });
}
