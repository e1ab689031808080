import type { ProviderKey } from '../providers/provider.types';

/** A model the gateway serves, and its price in micro-credits per 1,000 tokens (CONTRACT.md section 7). */
export interface ModelEntry {
  id: string;
  /** The provider it is listed under in /v1/models (any allowed provider may serve it). */
  provider: ProviderKey;
  inputPer1k: number;
  outputPer1k: number;
  /**
   * The price of input tokens the provider reports as cached (`prompt_tokens_details.cached_tokens`,
   * which are part of `prompt_tokens`), at most `inputPer1k` so that a request's estimate (every input
   * token at `inputPer1k`) still bounds its cost. Absent: cached tokens cost `inputPer1k` like the rest.
   */
  cachedInputPer1k?: number;
}

/**
 * The built-in catalogue: the fake upstream's models (npm start, tests) and a few of OpenAI's names
 * an in-house OpenAI-compatible server commonly serves under, at illustrative prices.
 */
export const DEFAULT_MODELS: readonly ModelEntry[] = [
  { id: 'fake-chat-1', provider: 'inhouse', inputPer1k: 1000, outputPer1k: 2000 },
  { id: 'fake-embed-1', provider: 'inhouse', inputPer1k: 100, outputPer1k: 0 },
  { id: 'gpt-4o-mini', provider: 'inhouse', inputPer1k: 150, outputPer1k: 600, cachedInputPer1k: 75 },
  { id: 'gpt-4o', provider: 'hosted', inputPer1k: 2500, outputPer1k: 10000, cachedInputPer1k: 1250 },
  { id: 'text-embedding-3-small', provider: 'inhouse', inputPer1k: 20, outputPer1k: 0 },
];

const isPrice = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** GATEWAY_MODELS: '' for the built-in catalogue, else a JSON array of ModelEntry (provider defaults to inhouse). */
export function parseModelCatalogue(json: string): ReadonlyMap<string, ModelEntry> {
  const entries = json.trim() === '' ? DEFAULT_MODELS : parseEntries(json);
  return new Map(entries.map((m) => [m.id, m]));
}

function parseEntries(json: string): ModelEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('is not valid JSON');
  }
  if (!Array.isArray(raw) || raw.length === 0) throw new Error('must be a non-empty JSON array');
  return raw.map((item: unknown, i) => {
    const m = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const provider = m['provider'] ?? 'inhouse';
    if (typeof m['id'] !== 'string' || m['id'] === '') throw new Error(`[${i}].id must be a non-empty string`);
    if (provider !== 'inhouse' && provider !== 'hosted') throw new Error(`[${i}].provider must be inhouse or hosted`);
    if (!isPrice(m['inputPer1k']) || !isPrice(m['outputPer1k'])) throw new Error(`[${i}] needs inputPer1k and outputPer1k as integers >= 0 (micro-credits)`);
    const cached = m['cachedInputPer1k'];
    if (cached !== undefined && (!isPrice(cached) || cached > m['inputPer1k'])) {
      throw new Error(`[${i}].cachedInputPer1k must be an integer >= 0 and <= inputPer1k (micro-credits), or left out`);
    }
    return { id: m['id'], provider, inputPer1k: m['inputPer1k'], outputPer1k: m['outputPer1k'], ...(cached === undefined ? {} : { cachedInputPer1k: cached }) };
  });
}

/** What a cost is computed at: a catalogue entry's prices, or those recorded on a reservation (cachedInputPer1k null: none). */
export type Prices = Pick<ModelEntry, 'inputPer1k' | 'outputPer1k'> & { cachedInputPer1k?: number | null };

/**
 * Micro-credits for the tokens, rounded up once over the whole request: a request never costs less
 * than what it used. `cachedTokens` are part of `inputTokens` (as OpenAI counts them): charged at
 * `cachedInputPer1k` when the model has one, and the rest of the input at `inputPer1k`, so no token is
 * charged twice; without a cached price, every input token costs `inputPer1k`. A cached count above
 * the input count (a provider's error) is taken as all of the input.
 */
export function costOf(prices: Prices, inputTokens: number, outputTokens: number, cachedTokens = 0): number {
  const cachedPrice = prices.cachedInputPer1k ?? undefined;
  const cached = cachedPrice === undefined ? 0 : Math.min(Math.max(cachedTokens, 0), inputTokens);
  const input = (inputTokens - cached) * prices.inputPer1k + cached * (cachedPrice ?? 0);
  return Math.ceil((input + outputTokens * prices.outputPer1k) / 1000);
}
