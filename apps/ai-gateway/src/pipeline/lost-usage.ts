import type { Usage } from '../providers/provider.types';

/** What is known of a request the provider had but whose usage it never reported. */
export interface LostUsage {
  /** The admission estimate's input (openai-request's estimateInput: the body's bytes, each image at GATEWAY_IMAGE_TOKENS, plus 64). */
  admittedInputTokens: number;
  /** The output reserved at admission: max tokens per choice x `n`. */
  reservedOutputTokens: number;
  /** The output read from the provider, at four characters a token (content, refusals, tool-call names and arguments). */
  deliveredOutputTokens: number;
  /**
   * How the answer was read: `stream` (as it was made, until it ended or was cut: what was read is what
   * the provider produced), `whole` (a whole non-streamed answer that came without usage), `lost` (a
   * non-streamed answer given up on after the request was sent: timed out, cut at shutdown, or
   * abandoned after the caller left; the provider may have produced all it was allowed).
   */
  read: 'stream' | 'whole' | 'lost';
}

/**
 * The tokens charged for a request whose usage was lost after it was sent (priced by costOf at the
 * row's admitted prices). Never less than an answered request would have cost, so hanging up is never
 * the cheaper way: the input is the admission estimate (an upper bound of any tokenizer's count,
 * images included), not the characters of the text; the output is what was read, and for an answer
 * never read the output reserved, which the provider was allowed to produce.
 */
export function lostUsage(lost: LostUsage): Usage {
  const delivered = lost.deliveredOutputTokens;
  return {
    inputTokens: lost.admittedInputTokens,
    outputTokens: lost.read === 'lost' ? Math.max(delivered, lost.reservedOutputTokens) : delivered,
    estimated: true,
  };
}
