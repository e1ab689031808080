import { GatewayError } from '../gateway.errors';
import { isRecord } from '../providers/usage';

/** `POST /v1/feedback`'s body: a score on a request the caller's tenant made (CONTRACT.md section 11). */
export interface Feedback {
  requestId: string;
  score: number;
  label: string | null;
}

/** A request id as the gateway writes them (a UUID) or a caller's sane token: at most this long. */
const MAX_REQUEST_ID = 128;
export const MAX_FEEDBACK_LABEL = 64;
/** Scores are the caller's scale (thumbs as 0/1, an evaluation's 0..1, a 1..5 rating): bounded so a mean stays meaningful. */
export const MAX_FEEDBACK_SCORE = 1_000_000;

const bad = (message: string, param: string | null): GatewayError => new GatewayError(400, 'invalid_request', message, param);

/** The body checked: `requestId` (1..128 visible ASCII), `score` (finite, |score| <= 1e6), `label` (up to 64 characters, optional). */
export function parseFeedback(text: string): Feedback {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new GatewayError(400, 'invalid_json', 'The request body is not valid JSON.', null);
  }
  if (!isRecord(body)) throw bad('The request body must be a JSON object {requestId, score, label?}.', null);
  const { requestId, score, label } = body;
  if (typeof requestId !== 'string' || !/^[\x21-\x7e]+$/.test(requestId) || requestId.length > MAX_REQUEST_ID) {
    throw bad(`requestId must be the x-request-id of one of your requests (1 to ${MAX_REQUEST_ID} visible ASCII characters).`, 'requestId');
  }
  if (typeof score !== 'number' || !Number.isFinite(score) || Math.abs(score) > MAX_FEEDBACK_SCORE) {
    throw bad(`score must be a finite number between -${MAX_FEEDBACK_SCORE} and ${MAX_FEEDBACK_SCORE}.`, 'score');
  }
  if (label !== undefined && label !== null && (typeof label !== 'string' || label.length > MAX_FEEDBACK_LABEL)) {
    throw bad(`label must be a string of at most ${MAX_FEEDBACK_LABEL} characters.`, 'label');
  }
  return { requestId, score, label: typeof label === 'string' ? label : null };
}
